"""SaveSet: the shared-structure set of saves a tensor's graph holds."""

import sys

from gradguard.domain.facts import EMPTY_SAVES, SaveSet


def test_union_is_a_set_union_and_equal_sets_hash_alike():
    a, b = SaveSet({1, 2}), SaveSet({2, 3})
    union = a | b | {4}
    assert set(union) == {1, 2, 3, 4}
    assert union == frozenset({1, 2, 3, 4}) == SaveSet({4, 3, 2, 1})
    assert hash(union) == hash(frozenset({1, 2, 3, 4}))
    assert 3 in union and 5 not in union and len(union) == 4


def test_empty_parts_vanish_and_one_part_is_itself():
    a = SaveSet({1})
    assert SaveSet.union(EMPTY_SAVES, a, ()) is a
    assert SaveSet.union() is EMPTY_SAVES and not EMPTY_SAVES
    assert a | EMPTY_SAVES is a and frozenset() | a is a


def test_intersection_and_difference():
    a = SaveSet({1, 2, 3}) | SaveSet({4})
    assert a & SaveSet({2, 4, 9}) == {2, 4}
    assert a - {1, 4} == {2, 3}
    assert a - frozenset() is a


def test_a_long_chain_flattens_without_recursion_and_shares_its_parts():
    chain = SaveSet({0})
    for record in range(1, 5 * sys.getrecursionlimit()):
        chain = chain | {record}
    middle = chain
    for record in range(10**5, 10**5 + 3):
        chain = chain | {record}
    assert len(chain) == 5 * sys.getrecursionlimit() + 3
    assert len(middle) == 5 * sys.getrecursionlimit()  # a part keeps its own content


def test_a_shared_part_counts_once():
    shared = SaveSet({1, 2})
    diamond = (shared | {3}) | (shared | {4})
    assert sorted(diamond) == [1, 2, 3, 4]


def _save(site, earlier=False):
    from gradguard.domain.events import SaveRecord
    from gradguard.domain.facts import earlier_twin
    record = SaveRecord((site, "0"), "x", "mul", None, "x")
    return earlier_twin(record) if earlier else record


def test_renamed_replaces_only_the_records_named():
    fresh, other = _save(1), _save(2)
    saves = SaveSet({fresh}) | {other}
    assert saves.renamed({fresh: _save(1, earlier=True)}) == {_save(1, earlier=True), other}
    assert saves.renamed({_save(3): _save(3, earlier=True)}) is saves


def test_a_join_keeps_an_earlier_save_where_the_other_path_holds_it_fresh():
    """One path ran an iteration (the save is the last one's), the other ran two and set
    the first one's apart: both hold the save of some iteration, which is an earlier one
    by the time the second path's writes are pending."""
    fresh, earlier, other = _save(1), _save(1, earlier=True), _save(2)
    assert SaveSet({fresh, other}).common(SaveSet({earlier, fresh})) == {fresh, earlier}
    assert SaveSet({earlier}).common(SaveSet({fresh})) == {earlier}
    assert SaveSet({earlier}).common(SaveSet({other})) == EMPTY_SAVES
