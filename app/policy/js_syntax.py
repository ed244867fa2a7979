"""JavaScript and TypeScript read into syntax trees: tree-sitter's grammars (from their
wheels; nothing is compiled at run time), chosen by a file's extension.

Pure: text in, a tree out. Used by the policy (what added lines do) and by the llm
fixer (where a repository's functions are, and whether an answer parses).
"""

from __future__ import annotations

from functools import cache
from typing import Literal

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Tree

Grammar = Literal["javascript", "typescript", "tsx"]
# The files of an npm project that hold code (declarations, .d.ts, hold none to fix).
SOURCE_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


@cache
def parser(grammar: Grammar) -> Parser:
    if grammar == "javascript":
        language = tree_sitter_javascript.language()
    elif grammar == "typescript":
        language = tree_sitter_typescript.language_typescript()
    else:
        language = tree_sitter_typescript.language_tsx()
    return Parser(Language(language))


def grammar_of(path: str) -> Grammar:
    """The grammar of a file by its extension (``.tsx``; ``.ts``/``.mts``/``.cts``;
    JavaScript, JSX included, otherwise)."""
    if path.endswith(".tsx"):
        return "tsx"
    return "typescript" if path.endswith((".ts", ".mts", ".cts")) else "javascript"


def is_source(path: str) -> bool:
    """A JavaScript or TypeScript file with code in it (not a ``.d.ts`` declaration)."""
    return path.endswith(SOURCE_SUFFIXES) and not path.endswith((".d.ts", ".d.mts", ".d.cts"))


def parse(path: str, text: bytes) -> Tree:
    """``text`` as the file at ``path`` would be read."""
    return parser(grammar_of(path)).parse(text)


def broken(node: Node) -> bool:
    """Whether tree-sitter had to recover anywhere under ``node`` (an error or a
    missing token): the text does not parse as it is."""
    return node.has_error
