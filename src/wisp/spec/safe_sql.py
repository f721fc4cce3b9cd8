"""The SQL expressions a query file may hold (`{expr: "..."}`): a safe subset, checked
without Spark.

A query file is data: it must not run code. Spark SQL can call any static Java method
(`reflect`, `java_method`), read the session's settings or the current user, so the
text of an `{expr: ...}` never reaches Spark as written. `canonical_sql` reads it with
its own tokenizer and recursive-descent parser, refuses everything outside the subset
below, and writes the expression back in a canonical form (every column back-quoted,
every compound parenthesised, only listed function names): that text, and nothing the
user wrote around it, is what Spark parses. Whatever this parser and Spark's might
disagree on (a string's end, a comment, precedence), Spark only ever sees what was
checked.

The subset (docs/cli.md#expressions):

* column references: `name`, `` `any name` ``, `a.b` (a field of a struct);
* literals: numbers (`1`, `2.5`, `1e3`, `10L`, `1.5BD`), strings (`'text'`, `"text"`,
  with backslash escapes), `TRUE`, `FALSE`, `NULL`, `DATE '...'`, `TIMESTAMP '...'`,
  `TIMESTAMP_NTZ '...'`, `TIMESTAMP_LTZ '...'` and intervals (`INTERVAL 5 MINUTES`,
  `INTERVAL '1:30' HOUR TO MINUTE`, `INTERVAL '1 day'`);
* arithmetic `+ - * / % DIV`, unary `-`/`+`, string concatenation `||`;
* comparisons `= == != <> < <= > >= <=>`;
* boolean logic `AND OR NOT !`, `IS [NOT] NULL|TRUE|FALSE|UNKNOWN`,
  `IS [NOT] DISTINCT FROM`, `[NOT] BETWEEN ... AND ...`, `[NOT] IN (...)`,
  `[NOT] LIKE|ILIKE ... [ESCAPE '...']`, `[NOT] RLIKE|REGEXP ...`;
* `CASE [value] WHEN ... THEN ... [ELSE ...] END`, `CAST(... AS type)`,
  `TRY_CAST(... AS type)` to a simple type;
* calls of the functions in `SAFE_FUNCTIONS`: pure, deterministic functions of their
  arguments (no reflection, no clock, no randomness, no session or user information).

Python users are not limited: a `Column` built in Python is passed to Spark as is.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from ..errors import WispInputError, bad_value

DOCS = "docs/cli.md#expressions"
MAX_EXPRESSION_CHARS = 4_000
"""The longest expression text accepted."""
MAX_NESTING = 32
"""The deepest nesting of parentheses, calls, `NOT`, unary signs and `CASE` accepted."""

SAFE_FUNCTIONS: frozenset[str] = frozenset({
    # conditionals and nulls
    "coalesce", "if", "ifnull", "nvl", "nvl2", "nullif", "isnull", "isnotnull", "isnan",
    "nanvl", "greatest", "least",
    # arithmetic
    "abs", "sign", "signum", "negative", "positive", "ceil", "ceiling", "floor", "round",
    "bround", "sqrt", "cbrt", "exp", "ln", "log", "log10", "log2", "pow", "power", "mod",
    "pmod", "try_add", "try_subtract", "try_multiply", "try_divide",
    # text
    "length", "char_length", "character_length", "lower", "upper", "lcase", "ucase",
    "trim", "ltrim", "rtrim", "substring", "substr", "left", "right", "concat",
    "concat_ws", "contains", "startswith", "endswith", "instr", "locate",
    # dates and times
    "year", "quarter", "month", "day", "dayofmonth", "dayofweek", "dayofyear", "weekday",
    "weekofyear", "hour", "minute", "second", "date_trunc", "trunc", "date_add",
    "date_sub", "datediff", "add_months", "months_between", "last_day", "to_date",
    "to_timestamp", "date_format", "from_utc_timestamp", "to_utc_timestamp",
    "from_unixtime", "unix_seconds", "unix_millis", "unix_micros", "unix_date",
    "timestamp_seconds", "timestamp_millis", "timestamp_micros", "date_from_unix_date",
    "make_date", "make_timestamp", "make_interval", "make_dt_interval",
    "make_ym_interval", "date_part",
})
"""The functions an `{expr: ...}` may call (by lower-case name): pure and deterministic.
Left out on purpose: reflection (`reflect`, `java_method`), the clock (`now`,
`current_timestamp`, `unix_timestamp`), randomness (`rand`, `uuid`), the session and
its user (`current_user`, `version`), functions whose result can outgrow their
arguments many times over (`repeat`, `lpad`, `space`, `replace`), aggregates, generators
and lambdas."""

TYPES = ("BOOLEAN", "TINYINT", "BYTE", "SMALLINT", "SHORT", "INT", "INTEGER", "BIGINT",
         "LONG", "FLOAT", "REAL", "DOUBLE", "STRING", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ",
         "TIMESTAMP_LTZ", "DECIMAL", "DEC", "NUMERIC")
"""The types `CAST(... AS type)` may name (`DECIMAL(p, s)` with its precision)."""
UNITS = ("YEAR", "YEARS", "MONTH", "MONTHS", "WEEK", "WEEKS", "DAY", "DAYS", "HOUR",
         "HOURS", "MINUTE", "MINUTES", "SECOND", "SECONDS", "MILLISECOND", "MILLISECONDS",
         "MICROSECOND", "MICROSECONDS")
"""The units of an `INTERVAL` literal."""
TYPED_LITERALS = ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ")
LITERAL_FUNCTIONS = frozenset({"current_date", "current_timestamp", "current_time",
                               "current_user", "user", "session_user", "grouping__id"})
"""Names Spark reads as a call (the clock, the user) when no column has the name: refused
as a bare column reference (`{col: user}` names such a column)."""
RESERVED = frozenset({"AND", "OR", "NOT", "IN", "IS", "BETWEEN", "LIKE", "ILIKE", "RLIKE",
                      "REGEXP", "CASE", "WHEN", "THEN", "ELSE", "END", "DIV", "ESCAPE",
                      "AS", "DISTINCT", "FROM", "TO", "NULL", "TRUE", "FALSE", "UNKNOWN",
                      "INTERVAL", "CAST", "TRY_CAST"})
"""Words that are never a column name here (back-quote a column with such a name)."""

COMPARISONS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=",
               ">": ">", ">=": ">=", "<=>": "<=>"}
OPERATORS = ("<=>", "<>", "!=", "<=", ">=", "==", "||", "=", "<", ">", "+", "-", "*",
             "/", "%", "(", ")", ",", ".", "!")
_NUMBER = re.compile(r"(?P<digits>[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?P<exponent>[eE][+-]?[0-9]+)?"
                     r"(?P<suffix>[bB][dD]|[lLsSyYdDfF])?")
_PLAIN_NUMBER = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")
_WORD = re.compile(r"[^\W\d]\w*")
_WORD_CHAR = re.compile(r"\w")


@dataclass(frozen=True)
class Token:
    """A token of an expression: its kind ("number", "string", "word", "quoted" for a
    back-quoted name, "op", "end"), its text (a string's raw content between its quotes,
    a back-quoted name without its quotes), the quote of a string, and its position
    (1-based)."""

    kind: str
    text: str
    position: int
    quote: str = ""

    def shown(self) -> object:
        """The token as an error message quotes it."""
        if self.kind == "end":
            return _Plain("the end of the expression")
        if self.kind == "string":
            return f"{self.quote}{self.text}{self.quote}"
        if self.kind == "quoted":
            return f"`{self.text}`"
        return self.text


class _Plain:
    """A text that an error message shows without quotes."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def canonical_sql(text: str, param: str = "expr") -> str:
    """`text`, a SQL expression of the safe subset, written canonically (the text to
    hand to Spark); a `WispInputError` naming `param` for anything else: a function not
    in `SAFE_FUNCTIONS` ("`param` must use only the listed functions (...), found
    'java_method'"), or any syntax outside the subset, with the character where it
    starts."""
    if not isinstance(text, str) or not text.strip():
        raise bad_value(param, "a non-empty SQL expression", text)
    if len(text) > MAX_EXPRESSION_CHARS:
        raise bad_value(param, f"an expression of at most {MAX_EXPRESSION_CHARS:,} "
                        "characters", _Plain(f"{len(text):,} characters"))
    parser = _Parser(tokens(text, param), param)
    rendered = parser.expression()
    parser.expect_end()
    return rendered


def tokens(text: str, param: str) -> list[Token]:
    """The tokens of `text`, ending with an "end" token. Comments are refused (a query
    file has YAML comments), and so is every character no token starts with."""
    found: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith(("--", "/*"), i):
            raise syntax_error(param, Token("op", text[i:i + 2], i + 1), "no comment")
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise syntax_error(param, Token("op", c, i + 1), f"a closing {c}")
            found.append(Token("string", text[i + 1:j], i + 1, c))
            i = j + 1
        elif c == "`":
            j = i + 1
            while j < n and (text[j] != "`" or text.startswith("``", j)):
                j += 2 if text[j] == "`" else 1
            if j >= n:
                raise syntax_error(param, Token("op", c, i + 1), "a closing `")
            name = text[i + 1:j].replace("``", "`")
            if not name:
                raise syntax_error(param, Token("op", "``", i + 1), "a name between `")
            found.append(Token("quoted", name, i + 1))
            i = j + 1
        elif (match := _NUMBER.match(text, i)) is not None:
            suffix = (match.group("suffix") or "").upper()
            integral = "." not in match.group("digits") and not match.group("exponent")
            end = match.end()
            if (suffix in ("L", "S", "Y") and not integral) or \
                    _WORD_CHAR.match(text, end) is not None:
                raise syntax_error(param, Token("number", text[i:end + 1], i + 1),
                                   "a number (digits, then at most a type suffix)")
            found.append(Token("number", text[i:end].upper(), i + 1))
            i = end
        elif _WORD.match(text, i):
            word = _WORD.match(text, i)
            assert word is not None
            found.append(Token("word", word.group(), i + 1))
            i = word.end()
        else:
            op = next((o for o in OPERATORS if text.startswith(o, i)), None)
            if op is None:
                raise syntax_error(param, Token("op", c, i + 1), "a value or an operator")
            found.append(Token("op", op, i + 1))
            i += len(op)
    found.append(Token("end", "", n + 1))
    return found


def syntax_error(param: str, token: Token, expected: str) -> WispInputError:
    """"`param` must be an expression of the documented subset (docs/...), found 'x';
    expected ... at character n"."""
    return bad_value(param, f"an expression of the documented subset ({DOCS})",
                     token.shown(), hint=f"expected {expected} at character {token.position}")


def function_error(param: str, name: str, hint: str = "") -> WispInputError:
    """"`param` must use only the listed functions (docs/...), found 'java_method'"."""
    close = difflib.get_close_matches(name.lower(), sorted(SAFE_FUNCTIONS), n=1, cutoff=0.8)
    hint = hint or (f"did you mean {close[0]!r}?" if close else "")
    return WispInputError(f"`{param}` must use only the listed functions ({DOCS}), "
                          f"found {name!r}" + (f"; {hint}" if hint else ""))


def is_wrapped(sql: str) -> bool:
    """Whether canonical `sql` is one parenthesised whole: its first `(` closes at its
    end (parentheses inside strings and back-quoted names do not count)."""
    depth, i, quote = 0, 0, ""
    while i < len(sql):
        c = sql[i]
        if quote:
            if c == "\\" and quote == "'":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i == len(sql) - 1
        elif depth == 0:
            return False
        i += 1
    return False


def quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def single_quoted(token: Token) -> str:
    """A string token as a single-quoted SQL string with the same content: the raw text
    of a single-quoted string as is; a double-quoted one with its bare `'` escaped."""
    if token.quote == "'":
        return f"'{token.text}'"
    out, i, raw = [], 0, token.text
    while i < len(raw):
        if raw[i] == "\\":
            out.append(raw[i:i + 2])
            i += 2
        else:
            out.append("\\'" if raw[i] == "'" else raw[i])
            i += 1
    return "'" + "".join(out) + "'"


class _Parser:
    """Recursive descent over the tokens, with Spark's precedence (loosest first): OR,
    AND, NOT, a predicate (BETWEEN, IN, LIKE, IS ...), comparisons, `+ - ||`,
    `* / % DIV`, unary signs, primaries. Each method returns its canonical text."""

    def __init__(self, found: list[Token], param: str) -> None:
        self.tokens = found
        self.param = param
        self.at = 0
        self.depth = 0

    # ------------------------------------------------------------------ tokens

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)]

    def take(self) -> Token:
        token = self.peek()
        self.at = min(self.at + 1, len(self.tokens) - 1)
        return token

    def is_word(self, token: Token, *words: str) -> bool:
        return token.kind == "word" and token.text.upper() in words

    def accept_word(self, *words: str) -> str | None:
        if self.is_word(self.peek(), *words):
            return self.take().text.upper()
        return None

    def accept_op(self, *ops: str) -> str | None:
        token = self.peek()
        if token.kind == "op" and token.text in ops:
            return self.take().text
        return None

    def expect_word(self, word: str) -> None:
        if self.accept_word(word) is None:
            self.fail(word)

    def expect_op(self, op: str) -> None:
        if self.accept_op(op) is None:
            self.fail(repr(op))

    def expect_end(self) -> None:
        if self.peek().kind != "end":
            self.fail("an operator or the end of the expression")

    def fail(self, expected: str) -> NoReturn:
        raise syntax_error(self.param, self.peek(), expected)

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise bad_value(self.param, f"an expression nested at most {MAX_NESTING} deep",
                            _Plain("deeper nesting"),
                            hint=f"at character {self.peek().position}")

    # ------------------------------------------------------------- grammar

    def expression(self) -> str:
        self.nested()
        try:
            return self.chain(self.conjunction, ("OR",))
        finally:
            self.depth -= 1

    def chain(self, operand: Callable[[], str], words: tuple[str, ...] = (),
              ops: dict[str, str] | None = None) -> str:
        """Operands of one precedence level joined left to right, in parentheses."""
        parts = [operand()]
        while True:
            word = self.accept_word(*words) if words else None
            op = word or (self.accept_op(*ops) if ops else None)
            if op is None:
                break
            parts += [ops[op] if ops and op in ops else op, operand()]
        return parts[0] if len(parts) == 1 else "(" + " ".join(parts) + ")"

    def conjunction(self) -> str:
        return self.chain(self.negation, ("AND",))

    def negation(self) -> str:
        if self.accept_word("NOT") or self.accept_op("!"):
            self.nested()
            try:
                return f"(NOT {self.negation()})"
            finally:
                self.depth -= 1
        return self.predicated()

    def predicated(self) -> str:
        value = self.comparison()
        negated = ""
        if self.is_word(self.peek(), "NOT") and self.is_word(
                self.peek(1), "BETWEEN", "IN", "LIKE", "ILIKE", "RLIKE", "REGEXP"):
            self.take()
            negated = "NOT "
        if self.accept_word("BETWEEN"):
            low = self.comparison()
            self.expect_word("AND")
            return f"({value} {negated}BETWEEN {low} AND {self.comparison()})"
        if self.accept_word("IN"):
            self.expect_op("(")
            items = [self.expression()]
            while self.accept_op(","):
                items.append(self.expression())
            self.expect_op(")")
            return f"({value} {negated}IN ({', '.join(items)}))"
        kind = self.accept_word("LIKE", "ILIKE", "RLIKE", "REGEXP")
        if kind is not None:
            pattern = self.comparison()
            escape = ""
            if kind in ("LIKE", "ILIKE") and self.accept_word("ESCAPE"):
                if self.peek().kind != "string":
                    self.fail("a string after ESCAPE")
                escape = f" ESCAPE {single_quoted(self.take())}"
            kind = "RLIKE" if kind == "REGEXP" else kind
            return f"({value} {negated}{kind} {pattern}{escape})"
        if negated:
            self.fail("BETWEEN, IN, LIKE, ILIKE or RLIKE")
        if self.accept_word("IS"):
            negated = "NOT " if self.accept_word("NOT") else ""
            what = self.accept_word("NULL", "TRUE", "FALSE", "UNKNOWN")
            if what is not None:
                return f"({value} IS {negated}{what})"
            if self.accept_word("DISTINCT"):
                self.expect_word("FROM")
                return f"({value} IS {negated}DISTINCT FROM {self.comparison()})"
            self.fail("NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM after IS")
        return value

    def comparison(self) -> str:
        return self.chain(self.additive, ops=COMPARISONS)

    def additive(self) -> str:
        return self.chain(self.multiplicative, ops={"+": "+", "-": "-", "||": "||"})

    def multiplicative(self) -> str:
        return self.chain(self.unary, ("DIV",), {"*": "*", "/": "/", "%": "%"})

    def unary(self) -> str:
        sign = self.accept_op("-", "+")
        if sign is None:
            return self.primary()
        self.nested()
        try:
            return f"({sign} {self.unary()})"
        finally:
            self.depth -= 1

    def primary(self) -> str:
        token = self.peek()
        if token.kind == "number":
            return self.take().text
        if token.kind == "string":
            return single_quoted(self.take())
        if token.kind == "op" and token.text == "(":
            self.take()
            inner = self.expression()
            self.expect_op(")")
            return inner if is_wrapped(inner) else f"({inner})"
        if token.kind == "quoted":
            return self.reference()
        if token.kind != "word":
            self.fail("a value")
        word = token.text.upper()
        following = self.peek(1)
        if word in ("TRUE", "FALSE", "NULL"):
            self.take()
            return word
        if word == "CASE":
            return self.case()
        if word in ("CAST", "TRY_CAST") and following.kind == "op" and following.text == "(":
            return self.cast()
        if word == "INTERVAL":
            return self.interval()
        if word in TYPED_LITERALS and following.kind == "string":
            self.take()
            return f"{word} {single_quoted(self.take())}"
        if word in RESERVED:
            self.fail("a value")
        return self.reference()

    def reference(self) -> str:
        """A column (`a`, `` `a b` ``, `a.b`), or a call when `(` follows the name."""
        parts = [self.take().text]
        while self.peek().kind == "op" and self.peek().text == "." and \
                self.peek(1).kind in ("word", "quoted"):
            self.take()
            parts.append(self.take().text)
        if self.peek().kind == "op" and self.peek().text == "(":
            return self.call(".".join(parts))
        if len(parts) == 1 and parts[0].lower() in LITERAL_FUNCTIONS:
            raise function_error(self.param, parts[0], f"Spark reads {parts[0]!r} as a call "
                                 "when no column has that name; name such a column with "
                                 "{col: ...}")
        return ".".join(quote_name(p) for p in parts)

    def call(self, name: str) -> str:
        if name.lower() not in SAFE_FUNCTIONS:
            raise function_error(self.param, name)
        self.expect_op("(")
        self.nested()
        try:
            arguments: list[str] = []
            if self.accept_op(")") is None:
                arguments.append(self.expression())
                while self.accept_op(","):
                    arguments.append(self.expression())
                self.expect_op(")")
        finally:
            self.depth -= 1
        return f"{name.lower()}({', '.join(arguments)})"

    def case(self) -> str:
        self.take()
        self.nested()
        try:
            parts = ["CASE"]
            if not self.is_word(self.peek(), "WHEN"):
                parts.append(self.expression())
            if not self.is_word(self.peek(), "WHEN"):
                self.fail("WHEN")
            while self.accept_word("WHEN"):
                parts += ["WHEN", self.expression()]
                self.expect_word("THEN")
                parts += ["THEN", self.expression()]
            if self.accept_word("ELSE"):
                parts += ["ELSE", self.expression()]
            self.expect_word("END")
        finally:
            self.depth -= 1
        return " ".join([*parts, "END"])

    def cast(self) -> str:
        kind = self.take().text.upper()
        self.expect_op("(")
        value = self.expression()
        self.expect_word("AS")
        name = self.accept_word(*TYPES)
        if name is None:
            self.fail(f"a type ({', '.join(TYPES)})")
        if name in ("DECIMAL", "DEC", "NUMERIC") and self.accept_op("("):
            sizes = [self.integer()]
            if self.accept_op(","):
                sizes.append(self.integer())
            self.expect_op(")")
            name += "(" + ", ".join(sizes) + ")"
        self.expect_op(")")
        return f"{kind}({value} AS {name})"

    def integer(self) -> str:
        token = self.peek()
        if token.kind != "number" or not token.text.isdigit():
            self.fail("an integer")
        return self.take().text

    def interval(self) -> str:
        """`INTERVAL 'text'`, `INTERVAL 'text' unit TO unit`, or one or more
        `[sign] (number | 'text') unit`."""
        self.take()
        parts: list[str] = []
        while True:
            sign = self.accept_op("-", "+") or ""
            token = self.peek()
            plain = token.kind == "number" and _PLAIN_NUMBER.fullmatch(token.text)
            if not (plain or token.kind == "string"):
                if parts:
                    break
                self.fail("a number or a string after INTERVAL")
            value = self.take().text if plain else single_quoted(self.take())
            unit = self.accept_word(*UNITS)
            if unit is None:
                if not parts and not sign and token.kind == "string":
                    return f"INTERVAL {value}"
                self.fail(f"a unit ({', '.join(UNITS[::2])})")
            parts.append(f"{sign}{value} {unit}")
            if len(parts) == 1 and self.accept_word("TO"):
                last = self.accept_word(*UNITS)
                if last is None:
                    self.fail("a unit after TO")
                return f"INTERVAL {parts[0]} TO {last}"
            signed = self.peek().kind == "op" and self.peek().text in ("-", "+")
            value_at = 1 if signed else 0
            if not (self.peek(value_at).kind in ("number", "string")
                    and self.is_word(self.peek(value_at + 1), *UNITS)):
                break
        return "INTERVAL " + " ".join(parts)
