"""The standard frequency oracles for large answer sets, each a
:class:`ldpsim.mechanisms.base.FrequencyOracle` with exact privacy, a vectorised sampler,
exact support probabilities and exact variance, and one entry in the catalog:

- :mod:`.unary`: symmetric and optimised unary encoding (SUE, basic one-time RAPPOR; OUE);
- :mod:`.hashing`: optimised and binary local hashing (OLH, BLH) with an explicit
  pairwise-independent hash family drawn per client;
- :mod:`.hadamard`: Hadamard response (a finite mechanism with K = 2^ceil(log2(k+1)) outputs);
- :mod:`.subset`: subset selection with the optimal subset size;
- :mod:`.rappor`: RAPPOR (Bloom filter, permanent and instantaneous randomized response).

Unary encoding, local hashing and subset selection are *pure* oracles (a report supports
its input with probability ``p*`` and any other answer with ``q*``); what follows from that
alone (support matrix, inversion) is written once, in :mod:`._pure`.

k-ary randomized response is :class:`ldpsim.mechanisms.RandomizedResponse`.
"""
