"""Letters drawn with other characters, as a reader reads them: for comparing what a judge
quotes of an agent's reply with the reply (scoring/judges/judge.py `normalise`).

A reply can spell its words in characters a reader reads as Latin letters but Unicode's
compatibility decomposition (NFKD) leaves as they are: letters drawn as symbols (🆆🅷🅰🆃,
Ⓦ's negative twin, the regional indicators 🇼🇭🇦🇹, braille's ⠺⠓⠁⠞), small capitals (ᴡʜᴀᴛ), and
the Cyrillic and Greek letters that look like Latin ones (Неllo). A judge quotes what it
reads ("What"), so unless both sides are read alike the quote is not found and its
preference or violation does not count. Applied to a text already case folded and
decomposed; only letters that look alike are mapped, as Unicode's confusables
(UTS #39) list them, so mapping both sides makes no quote match that a reader would not.
"""

from __future__ import annotations

_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_BRAILLE = "⠁⠃⠉⠙⠑⠋⠛⠓⠊⠚⠅⠇⠍⠝⠕⠏⠟⠗⠎⠞⠥⠧⠺⠭⠽⠵"
"""Braille's letters a to z (grade 1, as every braille code writes them)."""
_SMALL_CAPITALS = "ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡxʏᴢ"
"""Small capitals a to z (`x` has none of its own: the letter itself)."""
_CYRILLIC = {"а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
             "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d",
             "ԛ": "q", "ԝ": "w", "ӏ": "l", "һ": "h"}  # fmt: skip
_GREEK = {"α": "a", "β": "b", "ε": "e", "ζ": "z", "η": "h", "ι": "i", "κ": "k", "μ": "m",
          "ν": "n", "ο": "o", "ρ": "p", "τ": "t", "υ": "y", "χ": "x"}  # fmt: skip


def _drawn(first: int) -> dict[int, str]:
    """The 26 letters of a block that draws A to Z from `first` on."""
    return {first + index: letter for index, letter in enumerate(_ALPHABET)}


LOOKALIKES: dict[int, str] = {
    **_drawn(0x1F130),  # squared capitals 🄰 (NFKD already reads them; kept for symmetry)
    **_drawn(0x1F150),  # negative circled capitals 🅐
    **_drawn(0x1F170),  # negative squared capitals 🅰
    **_drawn(0x1F1E6),  # regional indicators 🇦
    **{ord(cell): letter for cell, letter in zip(_BRAILLE, _ALPHABET, strict=True)},
    **{ord(cap): letter for cap, letter in zip(_SMALL_CAPITALS, _ALPHABET, strict=True)},
    **{ord(glyph): letter for glyph, letter in (_CYRILLIC | _GREEK).items()},
}
"""A translation table (`str.translate`) from each such character to its Latin letter."""
