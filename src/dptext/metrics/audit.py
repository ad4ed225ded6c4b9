"""The privacy audit lives in :mod:`dptext.privacy.audit`; this name is kept for existing imports."""

from dptext.privacy.audit import AuditResult, GofResult, audit_mechanism, binned_counts, goodness_of_fit

__all__ = ["AuditResult", "GofResult", "audit_mechanism", "binned_counts", "goodness_of_fit"]
