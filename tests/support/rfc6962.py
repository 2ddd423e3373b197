"""RFC 6962 §2.1 transcribed independently of reviewapp.core.merkle: recursive, on the data itself.

The tests check the production tree against this, so it must stay a literal
reading of the RFC, never an import of the code under test.
"""

import hashlib


def H(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def split(n: int) -> int:
    """The largest power of two smaller than n."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def MTH(D: list[bytes]) -> bytes:
    if not D:
        return H(b"")
    if len(D) == 1:
        return H(b"\x00" + D[0])
    k = split(len(D))
    return H(b"\x01" + MTH(D[:k]) + MTH(D[k:]))


def PATH(m: int, D: list[bytes]) -> list[bytes]:
    if len(D) <= 1:
        return []
    k = split(len(D))
    if m < k:
        return PATH(m, D[:k]) + [MTH(D[k:])]
    return PATH(m - k, D[k:]) + [MTH(D[:k])]


def SUBPROOF(m: int, D: list[bytes], b: bool) -> list[bytes]:
    n = len(D)
    if m == n:
        return [] if b else [MTH(D)]
    k = split(n)
    if m <= k:
        return SUBPROOF(m, D[:k], b) + [MTH(D[k:])]
    return SUBPROOF(m - k, D[k:], False) + [MTH(D[:k])]


def PROOF(m: int, D: list[bytes]) -> list[bytes]:
    """Defined by the RFC for 0 < m < n; the empty proof otherwise."""
    return SUBPROOF(m, D, True) if 0 < m < len(D) else []
