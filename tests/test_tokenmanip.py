"""Token manipulation (SPEC 1.5): lossy mappers, Stencil, punctuated Stencil, noise mapper; minilm-wordpiece."""

import numpy as np
import pytest

from dptext.errors import DPTextError
from dptext.mechanisms import get_mechanism
from dptext.spaces import get_space

SPACES = ("smollm2", "minilm-wordpiece")
MAPPERS = ("2-random", "3-random", "high-freq", "low-freq")
TEXT = "The quick brown fox jumps over the lazy dog while seven wizards quietly brew potions."


@pytest.fixture(scope="module", params=SPACES)
def space(request):
    return get_space(request.param)


# ----- minilm-wordpiece ---------------------------------------------------------------------------
def test_minilm_space_table_and_specials():
    s = get_space("minilm-wordpiece")
    assert s.dim == 384 and s.size == 30522 - 999
    assert not any(u.startswith("[") and u.endswith("]") and len(u) > 2 for u in s.units)
    from safetensors.numpy import load_file

    from dptext.spaces.minilm import model_dir

    table = load_file(model_dir() + "/model.safetensors")["embeddings.word_embeddings.weight"]
    i = s.lookup("the")
    assert s.token_ids[i] == 1996 and np.array_equal(s.embeddings[i], table[1996])
    assert s.lookup("##ing") >= 0 and s.lookup("Café") == s.lookup("cafe") >= 0


def test_minilm_segmentation_round_trip_and_rendering():
    s = get_space("minilm-wordpiece")
    text = "Unbelievably, Café 2024 prices!  Wow\n\n😀 end "
    seg = s.segment(text)
    assert seg.join() == text
    units = [p.text for p in seg.pieces]
    assert "2024" in units and "##bel" in units and "😀" in units
    assert s.lookup("😀") < 0
    outs = ["##xx" if u.startswith("##") else u for u in units]
    assert "##" not in seg.join(outs)


# ----- lossy mappers --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MAPPERS)
def test_mapper_groups_partition_and_map_inside(space, name):
    m = get_mechanism(name, space=space, key=11)
    n = space.size
    members = np.concatenate(m.groups)
    assert np.array_equal(np.sort(members), np.arange(n))  # a partition: every unit exactly once
    assert all(len(g) >= 2 for g in m.groups)
    assert np.array_equal(m.group_of[m.mapping], m.group_of)  # every unit maps into its own group
    assert np.array_equal(m.mapping[m.representative], m.representative)
    k = {"2-random": 2, "3-random": 3}.get(name, 2)
    sizes = np.bincount(m.group_of)
    assert sizes.min() == k and sizes.max() <= k + 1
    y = int(m.mapping[123])
    assert 123 in m.preimage(y) and set(m.preimage(y).tolist()) == set(m.members(123).tolist())
    row = m.transition(space.units[123])
    assert row[y] == 1.0 and row.sum() == 1.0
    claim = m.privacy()
    assert claim.kind == "none" and claim.bound is None


@pytest.mark.parametrize("name", ("2-random", "3-random"))
def test_random_mapper_deterministic_given_key(name):
    a = get_mechanism(name, space="smollm2", key="secret")
    b = get_mechanism(name, space="smollm2", key="secret")
    c = get_mechanism(name, space="smollm2", key="other")
    assert np.array_equal(a.mapping, b.mapping)
    assert not np.array_equal(a.mapping, c.mapping)
    assert a.perturb(TEXT).text == b.perturb(TEXT).text
    # representatives are uniform members: about 1/k of units map to themselves
    k = a.group_size
    assert abs(np.mean(a.mapping == np.arange(len(a.mapping))) - 1 / k) < 0.02


def test_frequency_rule(space):
    hi = get_mechanism("high-freq", space=space)
    lo = get_mechanism("low-freq", space=space)
    n = space.size
    order = np.lexsort((np.arange(n), -space.freq))
    h = n // 2
    # rank r is paired with rank r + |V|/2
    assert np.array_equal(hi.group_of[order[:h]], hi.group_of[order[h : 2 * h]])
    assert np.array_equal(hi.group_of, lo.group_of)
    f = space.freq
    for g in range(0, hi.n_groups, 997):
        mem = hi.groups[g]
        assert f[hi.representative[g]] == f[mem].max()
        assert f[lo.representative[g]] == f[mem].min()
    # the frequent half maps to itself under high-freq, to its rare partner under low-freq
    assert np.all(hi.mapping[order[:h]] == order[:h])
    assert np.all(lo.mapping[order[: h - 1]] == order[h : 2 * h - 1])
    assert lo.mapping[order[h - 1]] == order[n - 1]  # odd |V|: the rarest unit closes the last group


def test_mapper_text_policies():
    m = get_mechanism("low-freq", space="smollm2", seed=1)
    res = m.perturb("Hello, world! 123")
    outs = {u.original: u for u in res.units}
    assert outs[","].output == "," and outs["!"].output == "!"
    assert outs["123"].reason == "digits"
    assert res.privacy["claim"]["kind"] == "none"
