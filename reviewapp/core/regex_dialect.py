"""Regular expressions in the reference's dialect, run by a linear-time engine.

The reference (Rust's `regex` crate) guarantees matching in time linear in the input:
no backreferences, no look-around, no recursion. RE2 is the same family and gives the
same guarantee, so no pattern needs a time-out to be safe; what bounds the work is the
size of the text (``MAX_INPUT_CHARS``) and RE2's own limit on compiled program size.

A pattern is translated once, where the two dialects differ, and compiled by RE2;
whatever RE2 then refuses is refused with RE2's own message. The translation follows
Rust where they differ:

- `\\w`, `\\d`, `\\s` (and `\\D`) are Unicode-aware, as in Rust, unless the `u` flag is
  cleared (`(?-u)`); RE2's are ASCII-only and it has no `u` flag at all.
- `\\p{...}` names are matched loosely (case, spaces, `_` and `-` ignored), as in Rust:
  `\\pl` is `\\pL`, `\\p{greek}` is `\\p{Greek}`, `\\p{Letter}` is `\\pL`.
- A repetition may be repeated (`a{2}*`), as in Rust; RE2 refuses that unless grouped.
- `(?x)` ignores whitespace and `#` comments, as in Rust.
- `\\u{7F}`, `\\u007F` and `\\U0000007F` name code points, as in Rust; RE2 only has
  `\\x{7F}`. A capture group name used twice is refused, as in Rust.
- Counted repetitions must be well formed: `a{,3}` and a stray `{` are refused, as in
  Rust, where RE2 would read them as literal text. `\\Q...\\E` and `\\C`, which RE2
  has and Rust does not, are refused too.

Known differences left: `\\b`/`\\B` and POSIX classes are ASCII-only (RE2's, and the
latter are ASCII in Rust too); `\\W`/`\\S` inside a bracketed class stay ASCII; nested
classes and class set operations (`[a[b]]`, `&&`, `--`, `~~`) are refused rather than
supported; Unicode properties other than general categories and scripts (e.g.
`\\p{Alphabetic}`) are refused by RE2, and so are counted repetitions above 1000
(`x{1001}`), which Rust accepts up to its size limit.
"""

import re2

# Linear time still grows with the text; nothing larger is searched.
MAX_INPUT_CHARS = 1_000_000


class PatternError(ValueError):
    """A pattern outside the dialect; the message says why, in the engine's words."""


_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # refusals are reported to the caller, not logged to stderr

_GENERAL_CATEGORIES = {
    "letter": "L", "casedletter": "L&", "uppercaseletter": "Lu", "lowercaseletter": "Ll",
    "titlecaseletter": "Lt", "modifierletter": "Lm", "otherletter": "Lo", "mark": "M",
    "combiningmark": "M", "nonspacingmark": "Mn", "spacingmark": "Mc",
    "enclosingmark": "Me", "number": "N", "decimalnumber": "Nd", "digit": "Nd",
    "letternumber": "Nl", "othernumber": "No", "punctuation": "P",
    "connectorpunctuation": "Pc", "dashpunctuation": "Pd", "openpunctuation": "Ps",
    "closepunctuation": "Pe", "initialpunctuation": "Pi", "finalpunctuation": "Pf",
    "otherpunctuation": "Po", "symbol": "S", "mathsymbol": "Sm", "currencysymbol": "Sc",
    "modifiersymbol": "Sk", "othersymbol": "So", "separator": "Z", "spaceseparator": "Zs",
    "lineseparator": "Zl", "paragraphseparator": "Zp", "other": "C", "control": "Cc",
    "cntrl": "Cc", "format": "Cf", "privateuse": "Co", "surrogate": "Cs", "any": "Any",
}

# Rust's Unicode classes (UTS #18): \w is Alphabetic, marks, decimal digits, connector
# punctuation and the joiners; \s is White_Space; \d is Nd.
_WORD = r"\p{L}\p{Nl}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}"
_SPACE = (
    r"\t\n\x0B\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}"
    r"\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}"
)
_DIGIT = r"\p{Nd}"


def compile(pattern: str):  # noqa: A001 - mirrors re.compile
    """Compile `pattern` in the reference's dialect, or raise PatternError."""
    if not isinstance(pattern, str):
        raise PatternError(f"a pattern is text, not {type(pattern).__name__}")
    translated = _Translator(pattern).run()
    try:
        return re2.compile(translated, _OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else "refused"
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternError(detail) from None


def search(compiled, text: str):
    """The first match of `compiled` in `text`, refusing text over the size limit."""
    if len(text) > MAX_INPUT_CHARS:
        raise InputTooLarge(len(text))
    return compiled.search(text)


class InputTooLarge(ValueError):
    def __init__(self, size: int) -> None:
        self.size = size
        super().__init__(
            f"the text is {size} characters long, over the {MAX_INPUT_CHARS} a pattern "
            "is matched against"
        )


def _property_name(name: str) -> str:
    """Rust's loose matching of a \\p name, spelled the way RE2 wants it."""
    negated = name.startswith("^")
    body = name[1:] if negated else name
    key = "".join(ch for ch in body if ch not in " _-").lower()
    if key.startswith("is") and key[2:] in _GENERAL_CATEGORIES:
        key = key[2:]
    if len(key) <= 2 and key:
        spelled = key[0].upper() + key[1:]
    elif key in _GENERAL_CATEGORIES:
        spelled = _GENERAL_CATEGORIES[key]
    else:
        # Scripts: RE2 spells them Title_Case with underscores (Old_Italic).
        words = [w for w in body.replace("-", " ").replace("_", " ").split(" ") if w]
        spelled = "_".join(w[0].upper() + w[1:].lower() for w in words) or body
    return ("^" if negated else "") + spelled


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.out: list[str] = []
        # One entry per open group: (unicode, verbose) in force inside it.
        self.flags: list[tuple[bool, bool]] = [(True, False)]
        # Where in `out` each open group starts, and the last atom's start.
        self.group_starts: list[int] = []
        self.atom_start: int | None = None
        self.after_repetition = False
        self.names: set[str] = set()

    def fail(self, message: str) -> None:
        raise PatternError(message)

    @property
    def unicode(self) -> bool:
        return self.flags[-1][0]

    @property
    def verbose(self) -> bool:
        return self.flags[-1][1]

    def run(self) -> str:
        p = self.p
        while self.i < len(p):
            ch = p[self.i]
            if self.verbose and ch in " \t\n\r\x0b\x0c":
                self.i += 1
            elif self.verbose and ch == "#":
                end = p.find("\n", self.i)
                self.i = len(p) if end < 0 else end + 1
            elif ch == "\\":
                self.atom(self.escape(in_class=False))
            elif ch == "[":
                self.atom(self.char_class())
            elif ch == "(":
                self.open_group()
            elif ch == ")":
                self.close_group()
            elif ch == "|":
                self.emit_plain("|")
                self.atom_start, self.after_repetition = None, False
            elif ch in "*+?":
                self.i += 1
                self.repetition(ch)
            elif ch == "{":
                self.repetition(self.counted())
            else:
                self.i += 1
                self.atom(ch)
        return "".join(self.out)

    def emit_plain(self, text: str) -> None:
        self.out.append(text)
        self.i += len(text)

    def atom(self, text: str) -> None:
        self.atom_start = len(self.out)
        self.after_repetition = False
        self.out.append(text)

    def repetition(self, operator: str) -> None:
        if self.i < len(self.p) and self.p[self.i] == "?":  # lazy
            operator += "?"
            self.i += 1
        if self.after_repetition and self.atom_start is not None:
            # RE2 refuses a repeated repetition (a{2}*); Rust repeats the repetition.
            self.out.insert(self.atom_start, "(?:")
            self.out.append(")")
        self.out.append(operator)
        self.after_repetition = True

    def counted(self) -> str:
        p = self.p
        close = p.find("}", self.i)
        body = p[self.i + 1 : close] if close >= 0 else ""
        lo, comma, hi = body.partition(",")
        valid = close >= 0 and lo.isascii() and lo.isdigit() and (
            not hi or (hi.isascii() and hi.isdigit())
        )
        if not valid:
            self.fail(
                f"invalid counted repetition at character {self.i}: write {{n}}, {{n,}} or "
                "{n,m}, or \\{ for a literal brace"
            )
        self.i = close + 1
        return "{" + lo + comma + hi + "}"

    def escape(self, *, in_class: bool) -> str:
        p = self.p
        if self.i + 1 >= len(p):
            self.fail("the pattern ends with a lone backslash")
        c = p[self.i + 1]
        self.i += 2
        if c in "pP":
            if self.i < len(p) and p[self.i] == "{":
                close = p.find("}", self.i)
                if close < 0:
                    self.fail("unclosed \\p{...} class name")
                name = p[self.i + 1 : close]
                self.i = close + 1
            elif self.i < len(p):
                name = p[self.i]
                self.i += 1
            else:
                self.fail("\\p needs a class name")
            return f"\\{c}{{{_property_name(name)}}}"
        if c in "QEC":
            self.fail(f"\\{c} is not part of the dialect (Rust's regex has no such escape)")
        if c in "uU":
            return self.unicode_escape(c)
        if self.unicode:
            if c == "d":
                return _DIGIT
            if c == "D":
                return r"\P{Nd}"
            if c == "w":
                return _WORD if in_class else f"[{_WORD}]"
            if c == "s":
                return _SPACE if in_class else f"[{_SPACE}]"
            if not in_class and c == "W":
                return f"[^{_WORD}]"
            if not in_class and c == "S":
                return f"[^{_SPACE}]"
        return "\\" + c

    def unicode_escape(self, c: str) -> str:
        """Rust's \\u007F, \\u{7F}, \\U0000007F and \\U{7F}, which RE2 writes \\x{7F}."""
        p = self.p
        if p.startswith("{", self.i):
            close = p.find("}", self.i)
            digits = p[self.i + 1 : close] if close > 0 else ""
            end = close + 1
        else:
            width = 4 if c == "u" else 8
            digits = p[self.i : self.i + width]
            end = self.i + width
            if len(digits) != width:
                digits = ""
        if not digits or not all(ch in "0123456789abcdefABCDEF" for ch in digits):
            self.fail(f"invalid \\{c} escape at character {self.i - 2}: write \\{c}{{hex digits}}")
        self.i = end
        return f"\\x{{{digits}}}"

    def char_class(self) -> str:
        p = self.p
        parts = ["["]
        self.i += 1
        if self.i < len(p) and p[self.i] == "^":
            parts.append("^")
            self.i += 1
        if self.i < len(p) and p[self.i] == "]":  # a leading ] is literal
            parts.append("\\]")
            self.i += 1
        while self.i < len(p):
            ch = p[self.i]
            if ch == "]":
                self.i += 1
                parts.append("]")
                return "".join(parts)
            if ch == "\\":
                parts.append(self.escape(in_class=True))
            elif ch == "[":
                end = p.find(":]", self.i)
                if p.startswith("[:", self.i) and end > 0:
                    parts.append(p[self.i : end + 2])
                    self.i = end + 2
                else:
                    self.fail("nested character classes are not supported; escape [ as \\[")
            elif p.startswith(("&&", "--", "~~"), self.i):
                self.fail(
                    f"class set operation {p[self.i : self.i + 2]!r} is not supported; "
                    f"escape the characters to mean them literally"
                )
            else:
                parts.append(ch)
                self.i += 1
        self.fail("unclosed character class")
        return ""

    def open_group(self) -> None:
        p = self.p
        start = len(self.out)
        unicode, verbose = self.flags[-1]
        if not p.startswith("(?", self.i):
            self.i += 1
            self.out.append("(")
        elif p.startswith(("(?P<", "(?<"), self.i) and not p.startswith(("(?<=", "(?<!"), self.i):
            close = p.find(">", self.i)
            if close < 0:
                self.fail("unclosed group name")
            name = p[p.index("<", self.i) + 1 : close]
            if name in self.names:
                self.fail(f"duplicate capture group name {name!r}")
            self.names.add(name)
            self.i = close + 1
            self.out.append(f"(?P<{name}>")
        else:
            j = self.i + 2
            while j < len(p) and p[j] not in ":)":
                j += 1
            flags = p[self.i + 2 : j]
            if j >= len(p) or not flags.replace("-", "").isalpha() and flags:
                # Look-around, comments, recursion, ...: RE2 names what it is.
                self.i += 1
                self.out.append("(")
            else:
                kept, on = "", True
                for f in flags:
                    if f == "-":
                        on = False
                        kept += f
                    elif f == "u":
                        unicode = on
                    elif f == "x":
                        verbose = on
                    else:
                        kept += f
                kept = kept.rstrip("-")
                self.i = j + 1
                if p[j] == ")":  # flags for the rest of the enclosing group
                    if kept:
                        self.out.append(f"(?{kept})")
                    self.flags[-1] = (unicode, verbose)
                    return
                self.out.append(f"(?{kept}:" if kept else "(?:")
        self.group_starts.append(start)
        self.flags.append((unicode, verbose))
        self.atom_start, self.after_repetition = None, False

    def close_group(self) -> None:
        self.i += 1
        self.out.append(")")
        if self.group_starts:
            self.flags.pop()
            self.atom_start = self.group_starts.pop()
        else:
            self.atom_start = None  # unbalanced: RE2 refuses it by name
        self.after_repetition = False
