"""Regular expressions in the reference's dialect, run by the reference's own engine.

The dialect is Rust's `regex` crate 1.13.1 (regex-syntax 0.8.11), the reference's
engine and version, and the crate itself runs it, through the `rurex` binding, which
embeds exactly that release. Every pattern the crate accepts is accepted and every one
it refuses is refused; `\\w`, `\\b`, `\\p{...}`, class set operations, `(?x)` and the
size limits are the crate's, and so is the match reported (the leftmost-first `find`,
offsets in characters). Matching is the crate's finite automata: linear in the text, no
backtracking, so no pattern needs a time-out; what bounds the work is the size of the
text (``MAX_INPUT_CHARS``) and the crate's limits on compiled size (10 MiB) and nesting.

rurex puts checks and readings of Python's `re` in front of the crate, so the verdict is
taken from rurex's RegexSet, which hands the pattern to the crate unaltered. For
matching, `rurex.compile` reads flags set by `(?i)` as `re`'s global flags where it
takes them for the start of the pattern (it accepts `(?ii)` and `(?a)`, and
`((?x) )[ a]` turns `x` on for the class too), and it refuses patterns the crate accepts:
a repeated repetition (`a**`, `a{2}*`), flags set after the start (`a(?i)b`), or what
its own reading mistakes for those (`\\x{3000}*`, `a{2}7{3}`, `(?i)` in a comment). A
pattern that sets flags, and one rurex refuses, is compiled respelled into a pattern
that parses to the same regex (`a(?i:b)`, `(?:a*)*`, ...). rurex's error messages are
the crate's errors in `re`'s words. A lone surrogate, which a Rust string cannot hold,
is refused.
"""

import functools

import rurex

from reviewapp.core.whitespace import WHITESPACE_SET

# Linear time still grows with the text; nothing larger is searched.
MAX_INPUT_CHARS = 1_000_000


class PatternError(ValueError):
    """A pattern outside the dialect; the message says why, in the engine's words."""


class InputTooLarge(ValueError):
    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__(
            f"the text is {size} characters long, over the {MAX_INPUT_CHARS} a pattern "
            "is matched against"
        )


def compile(pattern: str):  # noqa: A001 - mirrors re.compile
    """Compile `pattern` in the reference's dialect, or raise PatternError."""
    if not isinstance(pattern, str):
        raise PatternError(f"a pattern is text, not {type(pattern).__name__}")
    return _compile(pattern)


# Compiling is the crate's work twice over (below) and costs from 0.1 ms to a few ms for
# Unicode classes; a mandate's patterns are compiled on every evaluation. Patterns come
# from configured checkers and lens mandates, so few are live at once.
@functools.lru_cache(maxsize=128)
def _compile(pattern: str):
    if any("\ud800" <= ch <= "\udfff" for ch in pattern):
        raise PatternError("a pattern cannot hold a lone surrogate (U+D800 to U+DFFF)")
    # The crate's verdict: RegexSet hands the pattern to the crate unaltered.
    _engine(rurex.compile_set, [pattern])
    respeller = _Respeller(pattern)
    respelled = respeller.run()
    if not respeller.sets_flags:
        try:
            return _engine(rurex.compile, pattern)
        except PatternError:
            # Refused by rurex's `re` checks only, or by the size limit (a set compiles
            # without capture slots, so it can fit where the regex does not): the
            # respelled pattern is then refused again.
            pass
    return _engine(rurex.compile, respelled)


def search(compiled, text: str):
    """The first match of `compiled` in `text` (leftmost-first, as the crate's `find`),
    refusing text over the size limit. Offsets are in characters."""
    if len(text) > MAX_INPUT_CHARS:
        raise InputTooLarge(len(text))
    return compiled.search(text)


def _engine(call, argument):
    try:
        return call(argument)
    except rurex.error as exc:
        raise PatternError(str(exc)) from None
    except BaseException as exc:
        # rurex 0.2.0 panics (pyo3's PanicException, a BaseException) while placing
        # some errors in a pattern with non-ASCII text before them; the crate has
        # refused the pattern by then.
        if type(exc).__name__ != "PanicException":
            raise
        raise PatternError(
            "the regex engine refused the pattern but could not say where; the known "
            "cause is a capture group name used twice"
        ) from None


_ASCII_CLASSES = frozenset(
    "alnum alpha ascii blank cntrl digit graph lower print punct space upper word xdigit".split()
)
_HEX_WIDTH = {"x": 2, "u": 4, "U": 8}


def _literal(ch: str) -> str:
    """A literal character, written so that no reader can take it for syntax: escaped
    when it is ASCII punctuation (all of which may be escaped but `<` and `>`), by code
    point when it is whitespace (`x` would skip it), a control character or a digit
    (rurex reads the `7` in `a{2}7{3}` as part of a counted repetition)."""
    if ch in WHITESPACE_SET or ch.isdigit() and ch.isascii() or not ch.isprintable():
        return f"\\u{ord(ch):04X}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08X}"
    if ch.isascii() and not ch.isalnum() and ch not in "<>":
        return "\\" + ch
    return ch


class _Respeller:
    """A pattern the crate accepts, respelled so that rurex's `re` checks accept it too.

    It reads the pattern the way regex-syntax's parser does (ast/parse.rs: whitespace
    and comments under `x`, escapes, bracketed classes) and writes the same regex:

    - a repetition of a repetition gets a non-capturing group around its operand;
    - flags set mid-group, `(?i)`, become a flag group over the rest of the group,
      `(?i:...)`, reopened in each later branch, since the flags hold until the group
      closes;
    - whitespace and comments that `x` ignores are left out, and literal characters
      that could be read as syntax are escaped (see _literal), so the text reads the
      same whether or not a reader honours `x` where the crate does.
    """

    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.verbose = False  # the `x` flag, which changes how the text is read
        self.ignored = bytearray(len(pattern))  # 1 where `x` skipped a character
        self.names = 0
        self.sets_flags = False  # whether the pattern has an `(?i)`: rurex reads those

    def run(self) -> str:
        p = self.p
        frames = [_Group(opener="", verbose_before=False)]
        while True:
            self.bump_space()
            if self.eof():
                break
            ch = p[self.i]
            group = frames[-1]
            if ch == "(":
                self.open_group(frames)
            elif ch == ")":
                self.i += 1
                frames.pop()
                self.verbose = group.verbose_before
                frames[-1].item(group.close() + ")")
            elif ch == "|":
                self.i += 1
                group.end_branch()
            elif ch == "[":
                group.item(self.read_class())
            elif ch in "?*+":
                start = self.i
                self.i += 1
                if not self.eof() and p[self.i] == "?":
                    self.i += 1
                group.repeat(p[start : self.i])
            elif ch == "{":
                start = self.i
                self.skip_braces()
                self.bump_space()  # `a{2} ?` is lazy under `x`
                if not self.eof() and p[self.i] == "?":
                    self.i += 1
                group.repeat(self.text(start))
            elif ch == "\\":
                group.item(self.read_escape())
            else:
                self.i += 1
                group.item(ch if ch in ".^$" else _literal(ch))
        return frames[0].close()

    def text(self, start: int) -> str:
        """The pattern from `start` to here, less what `x` skipped."""
        kept = zip(self.p[start : self.i], self.ignored[start : self.i], strict=True)
        return "".join(ch for ch, skipped in kept if not skipped)

    def eof(self) -> bool:
        return self.i >= len(self.p)

    def bump_space(self) -> None:
        if not self.verbose:
            return
        start = self.i
        while not self.eof():
            ch = self.p[self.i]
            if ch in WHITESPACE_SET:
                self.i += 1
            elif ch == "#":
                end = self.p.find("\n", self.i)
                self.i = len(self.p) if end < 0 else end + 1
            else:
                break
        self.ignored[start : self.i] = b"\x01" * (self.i - start)

    def bump_and_bump_space(self) -> bool:
        self.i += 1
        self.bump_space()
        return not self.eof()

    def peek_space(self) -> str | None:
        """The parser's peek_space, as written: inside a comment it stops at the
        first character that is not whitespace."""
        p, start = self.p, self.i + 1
        if self.verbose:
            in_comment = False
            for ch in p[start:]:
                if ch in WHITESPACE_SET:
                    continue
                if not in_comment and ch == "#":
                    in_comment = True
                else:
                    return ch
        return p[start] if start < len(p) else None

    def skip_braces(self) -> None:
        """From a `{` to just past its `}`; under `x` a comment inside may hold a `}`."""
        while self.bump_and_bump_space() and self.p[self.i] != "}":
            pass
        self.i += 1

    def open_group(self, frames: list["_Group"]) -> None:
        p = self.p
        start = self.i
        self.i += 1
        self.bump_space()
        verbose_before = self.verbose
        if p.startswith(("?P<", "?<"), self.i):
            # rurex holds `(?P<...>` names to `re`'s rules (no `.`, `[`, `]`); the
            # name plays no part in a match, so each group gets a plain one.
            self.i = p.index(">", self.i) + 1
            self.names += 1
            opener = f"(?<n{self.names}>"
            frames.append(_Group(opener=opener, verbose_before=verbose_before))
            return
        if p.startswith("?", self.i):
            end = self.i + 1
            while p[end] not in ":)":
                end += 1
            on = True
            for flag in p[self.i + 1 : end]:
                if flag == "-":
                    on = False
                elif flag == "x":
                    self.verbose = on
            self.i = end
            opener = self.text(start) + ":"
            self.i = end + 1
            if p[end] == ")":  # flags for the rest of the enclosing group
                self.sets_flags = True
                frames[-1].set_flags(opener)
            else:
                frames.append(_Group(opener=opener, verbose_before=verbose_before))
            return
        frames.append(_Group(opener=self.text(start), verbose_before=verbose_before))

    def read_escape(self) -> str:
        p = self.p
        start = self.i
        self.i += 1
        ch = p[self.i]
        if ch in _HEX_WIDTH:
            self.bump_and_bump_space()
            if p[self.i] == "{":
                self.skip_braces()
            else:
                for _ in range(_HEX_WIDTH[ch] - 1):
                    self.bump_and_bump_space()
                self.i += 1
            # rurex reads the digits of \x{3000} as a counted repetition: \U has none.
            return f"\\U{int(self.text(start + 2).strip('{}'), 16):08X}"
        elif ch in "pP":
            self.bump_and_bump_space()
            if p[self.i] == "{":
                self.skip_braces()
            else:
                self.i += 1
        elif ch == "b" and p.startswith("{", self.i + 1):
            # \b{start} and kin; otherwise the brace is a counted repetition of \b.
            self.i += 1
            brace = self.i
            special = self.bump_and_bump_space() and (
                p[self.i] == "-" or p[self.i].isascii() and p[self.i].isalpha()
            )
            self.i = brace
            if special:
                self.skip_braces()
        else:
            self.i += 1
        return self.text(start)

    def read_class(self) -> str:
        p = self.p
        out = [self.read_class_open()]
        depth = 1
        while depth:
            self.bump_space()
            ch = p[self.i]
            if ch == "[":
                ascii_class = self.read_ascii_class()
                if ascii_class is None:
                    out.append(self.read_class_open())
                    depth += 1
                else:
                    out.append(ascii_class)
            elif ch == "]":
                self.i += 1
                depth -= 1
                out.append("]")
            elif ch in "&-~" and p.startswith(ch, self.i + 1):  # &&, --, ~~
                self.i += 2
                out.append(ch * 2)
            else:  # an item, or a range: after its `-` even `[` is a literal
                out.append(self.read_class_item())
                self.bump_space()
                if p[self.i] == "-" and self.peek_space() not in ("]", "-"):
                    self.bump_and_bump_space()
                    out.append("-" + self.read_class_item())
        return "".join(out)

    def read_class_open(self) -> str:
        p = self.p
        out = ["["]
        self.bump_and_bump_space()
        if p[self.i] == "^":
            out.append("^")
            self.bump_and_bump_space()
        dashes = p[self.i] == "-"
        while p[self.i] == "-":
            out.append("\\-")
            self.bump_and_bump_space()
        if not dashes and p[self.i] == "]":  # a leading ] is literal
            out.append("\\]")
            self.bump_and_bump_space()
        return "".join(out)

    def read_class_item(self) -> str:
        if self.p[self.i] == "\\":
            return self.read_escape()
        self.i += 1
        return _literal(self.p[self.i - 1])

    def read_ascii_class(self) -> str | None:
        p = self.p
        if not p.startswith("[:", self.i):
            return None
        name_start = self.i + 2 + p.startswith("^", self.i + 2)
        end = p.find(":", name_start)
        if end < 0 or not p.startswith(":]", end) or p[name_start:end] not in _ASCII_CLASSES:
            return None
        start, self.i = self.i, end + 2
        return p[start : self.i]


class _Group:
    """One open group of the respelled pattern: its branches so far and its flags."""

    def __init__(self, opener: str, verbose_before: bool) -> None:
        self.opener = opener
        self.verbose_before = verbose_before
        self.flag_groups: list[str] = []  # `(?i:` for each `(?i)` seen in the group
        self.branches: list[str] = []
        self.pieces: list[str] = []
        self.last: int | None = None  # where the last item starts in `pieces`
        self.last_repeated = False

    def item(self, text: str) -> None:
        self.last, self.last_repeated = len(self.pieces), False
        self.pieces.append(text)

    def repeat(self, operator: str) -> None:
        if self.last_repeated:
            self.pieces[self.last :] = ["(?:" + "".join(self.pieces[self.last :]) + ")"]
        self.pieces.append(operator)
        self.last_repeated = True

    def set_flags(self, flag_group: str) -> None:
        self.flag_groups.append(flag_group)
        self.pieces.append(flag_group)
        self.last, self.last_repeated = None, False

    def end_branch(self) -> None:
        self.branches.append("".join(self.pieces) + ")" * len(self.flag_groups))
        self.pieces = list(self.flag_groups)
        self.last, self.last_repeated = None, False

    def close(self) -> str:
        self.end_branch()
        return self.opener + "|".join(self.branches)
