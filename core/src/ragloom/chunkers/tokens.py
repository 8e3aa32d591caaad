"""Token-aware sizing: ``size_unit = "tokens"`` with a tokenizer.

``tokenizer`` names either a Hugging Face ``tokenizers`` file
(``"path/to/tokenizer.json"``, relative to the config file's folder) or a
tiktoken encoding (``"tiktoken:cl100k_base"``, needs ``pip install tiktoken``
and its encoding files available offline).

The document is tokenized once (no special tokens, no truncation). The size of
a span is the number of the document's tokens that *start* inside it, so sizes
add up exactly and chunk offsets stay character offsets into the original
text. Re-tokenizing a chunk on its own gives the same count when the chunk
edges fall on token starts, which is where separators and the last-resort
cuts put them.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path

from ragloom.errors import ConfigError, PluginError

#: ``starts(text)``: the sorted character offsets where the tokens of ``text`` start.
TokenStarts = Callable[[str], list[int]]


class TokenMeasure:
    """Token coordinates of one document: ``coord(offset)`` = tokens starting before ``offset``."""

    def __init__(self, starts: list[int], length: int, *, text: str | None = None, tokenize: TokenStarts | None = None):
        self.starts = starts
        self.length = length
        self.text = text
        self.tokenize = tokenize

    def coord(self, offset: int) -> int:
        """Number of tokens starting before ``offset``."""
        return bisect_left(self.starts, offset)

    def measure(self, start: int, end: int) -> int:
        """Tokens starting inside ``[start, end)``."""
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)

    def hard_cuts(self, start: int, end: int, size: int) -> list[int]:
        """Cut ``[start, end)`` at token starts so each part has at most ``size`` tokens.

        Only several tokens starting at the very same character (a byte-level
        tokenizer splitting one character) can make a part larger: an atom.
        """
        cuts: list[int] = []
        position = start
        starts = self.starts
        while self.measure(position, end) > size or self.alone(position, end) > size:
            if self.measure(position, end) <= size:  # the last piece fits by the document's count but not on its own
                cut = self._fit_alone(position, end, size)
                if cut >= end:
                    break
                cuts.append(cut)
                position = cut
                continue
            first = bisect_left(starts, position)
            target = first + size
            cut = starts[target] if target < len(starts) else end
            if cut <= position:  # one character carries more than size tokens
                cut = next((s for s in starts[target:] if s > position), end)
            if cut >= end:
                break
            cut = self._fit_alone(position, cut, size)
            cuts.append(cut)
            position = cut
        cuts.append(end)
        return cuts


    def inside_word(self, offset: int) -> bool:
        """True when ``offset`` falls between two word characters (a cut there splits a word)."""
        text = self.text
        return text is not None and 0 < offset < len(text) and text[offset - 1].isalnum() and text[offset].isalnum()

    def alone(self, start: int, end: int) -> int:
        """Tokens of ``text[start:end]`` re-tokenized on its own when it starts inside a word; else the document's count."""
        if self.tokenize is None or not self.inside_word(start):
            return self.measure(start, end)
        return max(self.measure(start, end), len(self.tokenize(self.text[start:end])))  # type: ignore[index]

    def coords(self, bounds: list[int]) -> list[int]:
        """Cumulative sizes at ``bounds`` for packing: a piece that starts inside a word counts as re-tokenized on its own."""
        out = [self.coord(bounds[0])] if bounds else []
        for start, end in zip(bounds, bounds[1:], strict=False):
            out.append(out[-1] + self.alone(start, end))
        return out

    def _fit_alone(self, position: int, cut: int, size: int) -> int:
        """Move ``cut`` back one token start at a time until ``text[position:cut]`` re-tokenized on its own
        has at most ``size`` tokens: a piece that starts inside a word (WordPiece ``##`` continuation)
        can tokenize into more pieces than it had inside the word."""
        if self.text is None or self.tokenize is None:
            return cut
        while self.alone(position, cut) > size:
            earlier = bisect_left(self.starts, cut) - 1
            if earlier < 0 or self.starts[earlier] <= position:
                break  # a single token: nothing smaller to cut
            cut = self.starts[earlier]
        return cut


def _hf_starts(path: Path) -> TokenStarts:
    try:
        import tokenizers
    except ImportError as exc:  # pragma: no cover - tokenizers ships with the test environment
        raise PluginError("size_unit = 'tokens' with a tokenizer.json needs the 'tokenizers' package: pip install tokenizers") from exc
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - any parse failure is a config error naming the file
        raise ConfigError(f"cannot load tokenizer file {str(path)!r}: {exc}") from exc
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def starts(text: str) -> list[int]:
        offsets = tokenizer.encode(text, add_special_tokens=False).offsets
        return sorted(start for start, _ in offsets)

    return starts


def _tiktoken_starts(name: str) -> TokenStarts:
    try:
        import tiktoken
    except ImportError as exc:
        raise PluginError("tokenizer 'tiktoken:...' needs the 'tiktoken' package: pip install tiktoken") from exc
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 - unknown name or encoding files not available offline
        raise ConfigError(f"cannot load tiktoken encoding {name!r}: {exc}") from exc

    def starts(text: str) -> list[int]:
        decoded, offsets = encoding.decode_with_offsets(encoding.encode(text, disallowed_special=()))
        if decoded != text:  # pragma: no cover - tiktoken round-trips valid text
            raise ConfigError(f"tiktoken encoding {name!r} does not round-trip this text")
        return sorted(min(o, len(text)) for o in offsets)

    return starts


def load_token_starts(spec: str, base_dir: Path | None = None) -> tuple[TokenStarts, str]:
    """The tokenizer a config names, and a digest identifying it (for fingerprints)."""
    if not spec:
        raise ConfigError("size_unit = 'tokens' needs a 'tokenizer' (a tokenizer.json path or 'tiktoken:NAME')")
    if spec.startswith("tiktoken:"):
        name = spec.split(":", 1)[1]
        return _tiktoken_starts(name), f"tiktoken:{name}"
    path = Path(spec).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read tokenizer file {str(path)!r}: {exc.strerror or exc}") from exc
    return _hf_starts(path), "sha256:" + hashlib.sha256(data).hexdigest()[:16]
