"""Authentication as kube-apiserver's ``--token-auth-file`` does it: static bearer tokens from a CSV file.

The file has one ``token,user,uid[,"group1,group2"]`` record a line (kube's tokenfile
authenticator). Every authenticated user also gets the group ``system:authenticated``.
Tokens are secrets: nothing here ever logs or formats one.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
MASTERS = "system:masters"


class TokenFileError(ValueError):
    """A ``--token-auth-file`` that cannot be used; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who a request is (kube's user.Info)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()


ANONYMOUS_USER = UserInfo(ANONYMOUS, "", (ALL_UNAUTHENTICATED,))


def parse_token_csv(text: str, source: str = "<token file>") -> dict[str, UserInfo]:
    """Records of a token file by token. Blank lines and ``#`` lines are skipped (kube's CSV
    reader skips only blank ones); fewer than 3 columns or bad quoting is an error naming the line."""
    tokens: dict[str, UserInfo] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            record = next(csv.reader([line], strict=True))
        except csv.Error as exc:
            raise TokenFileError(f"token file '{source}' line {number}: {exc}") from None
        if len(record) < 3:
            raise TokenFileError(f"token file '{source}' line {number}: must have at least 3 columns "
                                 f"(token, user name, user uid), found {len(record)}")
        token, name, uid = record[0], record[1], record[2]
        if not token:
            log.warning("empty token in token file", file=source, line=number)
            continue
        if token in tokens:
            log.warning("duplicate token in token file", file=source, line=number)
        groups = tuple(g for g in record[3].split(",") if g) if len(record) >= 4 else ()
        tokens[token] = UserInfo(name, uid, groups)
    return tokens


def load_token_file(path: Path) -> dict[str, UserInfo]:
    """Read and parse ``--token-auth-file`` (a startup step: blocking file I/O is fine here)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TokenFileError(f"token file '{path}': {exc.strerror or exc}") from None
    return parse_token_csv(text, str(path))


def bearer_token(header: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header ("" when there is none), as
    kube's bearertoken authenticator splits it."""
    auth = (header or "").strip()
    parts = auth.split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


def _with_authenticated_group(user: UserInfo) -> UserInfo:
    """kube's AuthenticatedGroupAdder: ``system:authenticated`` added unless either "all" group is there."""
    if ALL_AUTHENTICATED in user.groups or ALL_UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED))


class TokenAuthenticator:
    """Static tokens (from files and from the embedding program) → users; later tables win."""

    def __init__(self, tables: Iterable[Mapping[str, UserInfo]]) -> None:
        # the group is added once here, not per request
        self._tokens = {token: _with_authenticated_group(user) for table in tables for token, user in table.items()}

    def authenticate(self, authorization: str | None) -> UserInfo | None:
        """The user of the request's Authorization header, with ``system:authenticated`` added;
        None when the token is missing or unknown."""
        token = bearer_token(authorization)
        return self._tokens.get(token) if token else None
