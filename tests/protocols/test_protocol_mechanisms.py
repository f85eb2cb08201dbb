"""Each party's mechanism is a mechanism of the library, on the contract: a protocol exposes
them, privacy is checked on them, and a protocol can be built from any finite mechanisms on
a bit (catalog-built ones included) with the same exact accuracies as from their matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpsim.errors import LdpSimError
from ldpsim.mechanisms import catalog
from ldpsim.mechanisms.base import Mechanism
from ldpsim.protocols import OBSERVER, Protocol, Task, exact_accuracy


@pytest.mark.parametrize(
    "make",
    [
        lambda: Protocol.universal([0.5, 1.0, 2.0], [0.0, 0.05, 0.1]),
        lambda: Protocol.binary([0.5, 1.0, 2.0]),
    ],
)
def test_party_mechanisms_are_contract_mechanisms(make):
    p = make()
    assert len(p.mechanisms) == p.parties
    table = p.privacy_table()
    for j, m in enumerate(p.mechanisms):
        assert isinstance(m, Mechanism) and m.k == 2 and m.output_size == p.matrices[j].shape[1]
        np.testing.assert_allclose(m.matrix, p.matrices[j], rtol=0, atol=1e-15)
        assert m.is_private(float(p.eps[j]), float(p.delta[j]))
        assert table.loc[j, "exact_delta_at_eps"] == float(m.delta(float(p.eps[j])))


def test_a_protocol_from_catalog_mechanisms_equals_one_from_their_matrices():
    mechs = [
        catalog.build("randomized_response", k=2, eps=1.0),
        catalog.parse("quaternary:eps=0.5,delta=0.1").mechanism,
        catalog.parse("matrix:matrix=[[0.7,0.2,0.1],[0.1,0.2,0.7]]").mechanism,
    ]
    p = Protocol.from_mechanisms(mechs, delta=[0.0, 0.1, 0.0])
    q = Protocol.from_matrices([m.matrix for m in mechs], [1.0, 0.5, math.log(7.0)], [0.0, 0.1, 0.0])
    assert (
        p.eps[0] == pytest.approx(1.0) and p.eps[1] == pytest.approx(0.5) and p.eps[2] == pytest.approx(math.log(7.0))
    )
    task = Task.xor(3)
    for who in (OBSERVER, 0, 2):
        assert exact_accuracy(p, task, who) == exact_accuracy(q, task, who)


def test_from_mechanisms_refuses_what_is_not_a_finite_mechanism():
    # a party may hold one of three values: its mechanism then has three inputs
    mixed = Protocol.from_mechanisms(
        [catalog.build("randomized_response", k=2, eps=1.0), catalog.build("randomized_response", k=3, eps=1.0)]
    )
    assert mixed.inputs == (2, 3) and not mixed.binary_inputs
    with pytest.raises(
        LdpSimError, match=r"^mechanisms\[0\]: got .*expected a finite mechanism on a bit or a small alphabet"
    ):
        Protocol.from_mechanisms([catalog.build("laplace", eps=1.0)])
    with pytest.raises(LdpSimError, match=r"^mechanisms: got '0 parties'"):
        Protocol.from_mechanisms([])
    with pytest.raises(LdpSimError, match=r"^matrices\[0\]: got 'a matrix with exact delta"):
        Protocol.from_mechanisms(
            [catalog.build("randomized_response", k=2, eps=2.0)], eps=1.0
        )  # claims less than it has
