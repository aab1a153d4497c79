"""Which rule reports a write into a saved tensor: the rules' claims and their order
(rules/claims.py, ``rules.SAVED_WRITE_CLAIMANTS``)."""

from __future__ import annotations

import itertools

import pytest

from gradguard.rules import ALL_RULES, SAVED_WRITE_CLAIMANTS, claimant
from gradguard.rules.base import Rule
from gradguard.rules.claims import FACTS, Claim, SavedWrite


@pytest.mark.parametrize("facts, code", [
    ({}, "GG201"),
    ({"parameter_update": True}, "GG202"),
    ({"into_function_save": True, "parameter_update": True}, "GG206"),
    ({"in_function": True, "into_function_save": True}, "GG204"),
    ({"silent": True, "in_function": True}, "GG301"),
    ({"detach": True, "silent": True}, "GG306"),
])
def test_the_first_claim_that_holds_wins(facts, code) -> None:
    assert claimant(SavedWrite(**facts)) == code


def test_every_write_has_a_claimant() -> None:
    for values in itertools.product((False, True), repeat=len(FACTS)):
        write = SavedWrite(**dict(zip(FACTS, values)))
        assert claimant(write) in {rule.code for rule in SAVED_WRITE_CLAIMANTS}


def test_the_rules_that_report_saved_writes_are_the_claimants() -> None:
    reporters = {rule for rule in ALL_RULES
                 if rule.on_saved_tensor_mutated is not Rule.on_saved_tensor_mutated}
    assert reporters == set(SAVED_WRITE_CLAIMANTS)
    assert all(isinstance(rule.claims, Claim) for rule in SAVED_WRITE_CLAIMANTS)


def test_a_claim_names_known_facts_only() -> None:
    with pytest.raises(ValueError, match="unknown write facts"):
        Claim("through_data")
