"""Benchmark cite resolution against a ~1 MB proposal.

Run: python benchmarks/grounding.py

Builds a deterministic proposal (mixed scripts, emoji and ZWJ sequences,
markdown emphasis, tables, newlines) and 1,000 cites — a quarter each exact,
case-drifted, quote-wrapped and re-wrapped, fabricated — then times
`resolve_cites` on all of them against per-cite `resolve_cite` on a sample.
Target: all 1,000 in under 2 s.
"""

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reviewapp.core.cite import resolve_cite, resolve_cites  # noqa: E402

SEED = 20240611
TARGET_BYTES = 1_000_000
CITES_PER_KIND = 250
SAMPLE_PER_KIND = 10
TARGET_SECONDS = 2.0

WORDS = {
    "latin": "café naïve résumé über straße élan façade crème déjà señor año coração "
    "algorithm sorts stable merge pivot tribunal evidence claim proposal review".split(),
    "cyrillic": "алгоритм сортирует данные быстро устойчивый слияние доказательство "
    "решение трибунал заявление".split(),
    "greek": "αλγόριθμος ταξινόμηση σταθερός συγχώνευση απόδειξη δικαστήριο "
    "ισχυρισμός πρόταση λόγος".split(),
    "cjk": "算法 排序 稳定 合并 证据 法庭 主张 提案 审查 数据 アルゴリズム 整列".split(),
    "arabic": "خوارزمية ترتيب مستقر دمج دليل محكمة ادعاء اقتراح مراجعة بيانات".split(),
}
EMOJI = ["😀", "🚀", "✅", "👩\u200d💻", "👨\u200d👩\u200d👧", "🏳\ufe0f\u200d🌈", "👍🏽", "e\u0301"]


def sentence(rng: random.Random) -> str:
    script = rng.choice(list(WORDS))
    words = [rng.choice(WORDS[script]) for _ in range(rng.randint(6, 16))]
    words[0] = words[0].capitalize()
    for i in range(len(words)):
        roll = rng.random()
        if roll < 0.05:
            words[i] = f"**{words[i]}**"
        elif roll < 0.09:
            words[i] = f"*{words[i]}*"
        elif roll < 0.12:
            words[i] += " " + rng.choice(EMOJI)
    return " ".join(words) + rng.choice([".", "!", "?", ";"])


def table(rng: random.Random) -> str:
    rows = ["| term | meaning |", "|---|---|"]
    for _ in range(rng.randint(2, 5)):
        rows.append(f"| **{sentence(rng)[:24]}** | {sentence(rng)} |")
    return "\n".join(rows)


def build_proposal(rng: random.Random) -> str:
    parts: list[str] = []
    size = 0
    while size < TARGET_BYTES:
        if rng.random() < 0.1:
            block = table(rng)
        else:
            # Hard-wrapped paragraph: newlines inside sentences, as models emit.
            para = " ".join(sentence(rng) for _ in range(rng.randint(2, 6)))
            block = para.replace(" ", "\n", rng.randint(0, 2))
        parts.append(block)
        size += len(block.encode()) + 2
    return "\n\n".join(parts)


def excerpt(rng: random.Random, source: str) -> str:
    """A word-aligned stretch of the source, 30-150 chars."""
    while True:
        start = source.find(" ", rng.randrange(len(source) - 200)) + 1
        end = source.rfind(" ", start, start + rng.randint(30, 150))
        text = source[start:end].strip()
        if len(text) >= 20:
            return text


def make_cites(rng: random.Random, source: str) -> dict[str, list[str]]:
    def drift_case(text: str) -> str:
        return text.lower() if rng.random() < 0.5 else text[0].swapcase() + text[1:]

    def wrap_and_rewrap(text: str) -> str:
        text = " ".join(text.split())
        words = text.split(" ")
        text = "".join(w + rng.choice([" ", " ", "\n", "  "]) for w in words).strip()
        opener, closer = rng.choice(['""', "“”", "«»", "''"])
        return f"{opener}{text}{closer}"

    def fabricate() -> str:
        if rng.random() < 0.5:
            words = excerpt(rng, source).split()
            mid = len(words) // 2
            return " ".join(words[:2] + ["..."] + words[mid:])
        script = rng.choice(list(WORDS))
        return " ".join(rng.choice(WORDS[script]) for _ in range(8))

    return {
        "exact": [excerpt(rng, source) for _ in range(CITES_PER_KIND)],
        "case-drifted": [drift_case(excerpt(rng, source)) for _ in range(CITES_PER_KIND)],
        "wrapped+rewrapped": [wrap_and_rewrap(excerpt(rng, source)) for _ in range(CITES_PER_KIND)],
        "fabricated": [fabricate() for _ in range(CITES_PER_KIND)],
    }


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    rng = random.Random(SEED)
    source = build_proposal(rng)
    by_kind = make_cites(rng, source)
    cites = [cite for kind in by_kind.values() for cite in kind]
    print(f"proposal: {len(source.encode()):,} bytes, {len(source):,} code points")
    print(f"cites: {len(cites):,} ({', '.join(f'{len(v)} {k}' for k, v in by_kind.items())})")

    t0 = time.perf_counter()
    batch = resolve_cites(source, cites)
    batch_s = time.perf_counter() - t0
    print(f"resolve_cites, all {len(cites):,}: {batch_s:.3f} s")

    offset = 0
    for kind, kind_cites in by_kind.items():
        hits = sum(span is not None for span in batch[offset : offset + len(kind_cites)])
        print(f"  resolved {kind:<18} {hits:>4} / {len(kind_cites)}")
        offset += len(kind_cites)

    sample = [
        (i, cite)
        for base, kind_cites in zip(
            range(0, len(cites), CITES_PER_KIND), by_kind.values(), strict=True
        )
        for i, cite in enumerate(kind_cites[:SAMPLE_PER_KIND], start=base)
    ]
    t0 = time.perf_counter()
    single = [resolve_cite(source, cite) for _, cite in sample]
    single_s = time.perf_counter() - t0
    extrapolated = single_s / len(sample) * len(cites)
    print(
        f"resolve_cite per cite, sample of {len(sample)}: {single_s:.3f} s "
        f"-> {extrapolated:.1f} s extrapolated to {len(cites):,}"
    )

    identical = single == [batch[i] for i, _ in sample]
    print(f"sample results identical between the two: {identical}")
    assert identical, "resolve_cites diverged from resolve_cite"
    verdict = "met" if batch_s < TARGET_SECONDS else "MISSED"
    print(f"target < {TARGET_SECONDS:.0f} s for {len(cites):,} cites: {verdict}")


if __name__ == "__main__":
    main()
