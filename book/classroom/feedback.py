"""The grader's feedback in the student's language, from the string table.

Every sentence the grader writes into a row's ``detail`` (a hidden case's name, why its output
is wrong, how a group was scored) is a :class:`Text`: a ``str`` that reads as English, so that
the hidden cases, the checks and the CSV stay what they were, and that also keeps its message id
(``book/strings/classroom.toml``) and values, so that :func:`words` can write it in Chinese. The
language never reaches a comparison or a score: it is applied last, to wording only
(:func:`book.classroom.grading.score`). What a student's own code printed or raised stays as
it was.
"""
from __future__ import annotations

from book.kit import i18n

LANGUAGES = i18n.LANGUAGES


class Text(str):
    """``Text("classroom.wrong_shape", what=..., got=..., expected=...)``: the message in
    English as a string; :meth:`to` gives it in another language. Values that are Texts are
    translated too."""

    msg_id: str
    values: dict

    def __new__(cls, msg_id: str, /, **values):
        self = super().__new__(cls, _format(msg_id, "en", values))
        self.msg_id, self.values = msg_id, values
        return self

    def to(self, language: str) -> str:
        return _format(self.msg_id, language, self.values)

    def __reduce__(self):   # pickles (and copies) as the message, not as a plain str
        return (_rebuild, (self.msg_id, self.values))


def _rebuild(msg_id: str, values: dict) -> Text:
    return Text(msg_id, **values)


def _format(msg_id: str, language: str, values: dict) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    entries = i18n.table()
    if msg_id not in entries:
        raise KeyError(f"no message {msg_id!r} in the string table: add it to "
                       f"book/strings/{msg_id.split('.')[0]}.toml with en = ... and zh = ...")
    shown = {k: words(v, language) if isinstance(v, Text) else v for k, v in values.items()}
    return entries[msg_id][language].format(**shown)


def words(text, language: str) -> str:
    """``text`` in ``language`` where it is a :class:`Text`, else as it is."""
    return text.to(language) if isinstance(text, Text) else str(text)
