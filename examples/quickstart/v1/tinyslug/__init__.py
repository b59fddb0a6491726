"""tinyslug: turn titles into URL slugs."""

import re
import unicodedata

__version__ = "1.0"


def slugify(text: str, sep: str = "-") -> str:
    """The lower-case ASCII words of ``text``, joined by ``sep``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.split(r"[^a-z0-9]", ascii_text.lower())
    return sep.join(words)
