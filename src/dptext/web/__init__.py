"""The web playground (:mod:`dptext.web.app`, ``dptext playground``) and the proxy's dashboard
(:mod:`dptext.web.dashboard`): static HTML, CSS and a little JavaScript shipped in the package."""
