"""Letters drawn with other characters, as a reader reads them: for comparing what a judge
quotes of an agent's reply with the reply (scoring/judges/judge.py `normalise`).

A reply can spell its words in characters a reader reads as Latin letters but Unicode's
compatibility decomposition (NFKD) leaves as they are: letters drawn as symbols (🆆🅷🅰🆃,
Ⓦ's negative twin, the regional indicators 🇼🇭🇦🇹, braille's ⠺⠓⠁⠞), small capitals (ᴡʜᴀᴛ), and
the Cyrillic and Greek letters that look like Latin ones (Неllo). A judge quotes what it
reads ("What"), so unless both sides are read alike the quote is not found and its
preference or violation does not count. Applied to a text already case folded and
decomposed (capitals before it is folded, which would turn Н, an H to a reader, into н);
only letters that look alike are mapped, in the case they look alike in, so mapping both
sides makes no quote match that a reader would not.
"""

from __future__ import annotations

_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_BRAILLE = "⠁⠃⠉⠙⠑⠋⠛⠓⠊⠚⠅⠇⠍⠝⠕⠏⠟⠗⠎⠞⠥⠧⠺⠭⠽⠵"
"""Braille's letters a to z (grade 1, as every braille code writes them)."""
_SMALL_CAPITALS = "ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡxʏᴢ"
"""Small capitals a to z (`x` has none of its own: the letter itself)."""
_CAPITALS = {
    **dict(zip("АВЕКМНОРСТХУЅІЈ", "ABEKMHOPCTXYSIJ", strict=True)),  # Cyrillic
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),  # Greek
}
"""Capitals that look like Latin ones, read before case folding: folded first, Н (which
looks like H) would be н, which does not."""
_SMALL = {
    **dict(zip("аеорсухѕіјԁԛԝӏһк", "aeopcyxsijdqwlhk", strict=True)),  # Cyrillic
    **dict(zip("αονυικρχη", "aovuikpxn", strict=True)),  # Greek
}
"""Small letters that look like Latin ones, read after case folding."""


def _drawn(first: int) -> dict[int, str]:
    """The 26 letters of a block that draws A to Z from `first` on."""
    return {first + index: letter for index, letter in enumerate(_ALPHABET)}


LOOKALIKES: dict[int, str] = {
    **_drawn(0x1F130),  # squared capitals 🄰 (NFKD already reads them; kept for symmetry)
    **_drawn(0x1F150),  # negative circled capitals 🅐
    **_drawn(0x1F170),  # negative squared capitals 🅰
    **_drawn(0x1F1E6),  # regional indicators 🇦
    **{ord(cell): letter for cell, letter in zip(_BRAILLE, _ALPHABET, strict=True)},
    **{
        ord(cap): letter
        for cap, letter in zip(_SMALL_CAPITALS, _ALPHABET, strict=True)
        if cap != letter
    },
    **{ord(glyph): letter for glyph, letter in _SMALL.items()},
}
"""A translation table (`str.translate`) from each such character to its Latin letter, for
a text already case folded."""
CAPITAL_LOOKALIKES: dict[int, str] = {ord(glyph): letter for glyph, letter in _CAPITALS.items()}
"""The table for capitals, for a text before it is case folded."""
