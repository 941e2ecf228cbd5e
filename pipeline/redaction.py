"""What a run records and prints about credentials: storage-option keys, never their values.

The policy is an allow-list, not a deny-list of secret-looking names: a credential can hide under
any name (``connection_string``, ``headers.Authorization``, ``client_kwargs.aws_secret_access_key``,
``config_kwargs``, ``s3_additional_kwargs.SSECustomerKey``, a service-account dict under ``token``).

* :func:`redact_options`: every key of ``storage_options`` is kept, at any depth; a value is kept
  only for the options in :data:`SAFE_OPTIONS` (and only a scalar one); every other value is
  :data:`REDACTED`.  Endpoint URLs go through :func:`redact_url`.
* :func:`redact_url`: ``scheme://user:password@host`` loses its user and password, every value of
  a query string (``?sv=...&sig=...``, an Azure SAS) is :data:`REDACTED`; the keys stay.
* :class:`Redactor` masks free text (messages, logs, progress, error summaries): the config's own
  secret values wherever they appear, plus URL userinfo, query values and connection-string keys.
  :func:`masked_std` routes this process's stdout and stderr through it.
"""
from __future__ import annotations

import contextlib
import json
import re
import sys
from typing import Any, Iterable

REDACTED = "<redacted>"

# Options whose values are known to be harmless and help to read a run record (dotted paths from
# the storage_options mapping).  Everything else is recorded as REDACTED.
SAFE_OPTIONS = frozenset({
    "anon", "use_ssl", "requester_pays", "version_aware", "region_name", "endpoint_url",
    "client_kwargs.region_name", "client_kwargs.endpoint_url", "project", "account_name",
    "default_block_size", "default_cache_type", "max_concurrency", "auto_mkdir",
    "skip_instance_cache", "use_listings_cache", "listings_expiry_time",
})
_URL_OPTIONS = ("endpoint_url",)

_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]*://"
# Any userinfo: user:password@, but also a token alone (https://TOKEN@host, s3://KEY@bucket); up to
# the authority's last "@", as URL parsers (urllib, fsspec) split it: a password may hold an "@"
_USERINFO_AT_START = re.compile(rf"^({_SCHEME})([^/?#\s]+)@")
_USERINFO_IN_TEXT = re.compile(rf"({_SCHEME})([^/?#\s'\"]+)@")
# Azure URLs name the container there (abfs://container@account.dfs.core.windows.net): no secret
_CONTAINER_AT = frozenset({"abfs://", "abfss://", "az://", "adl://", "wasb://", "wasbs://"})
_QUERY_VALUE = re.compile(r"([?&][A-Za-z0-9_.\-]+=)[^&#\s'\"]*")
# Azure connection strings and the like: "AccountKey=...;" (case-insensitive key names)
_KEYED_SECRET = re.compile(r"((?:AccountKey|SharedAccessSignature|SharedAccessKey|SharedAccessKeyName|"
                           r"Password|Pwd|ClientSecret|Token|Sig|Signature)=)[^;&\s'\"]*", re.IGNORECASE)
_AUTH_HEADER = re.compile(r"((?:Authorization|Proxy-Authorization)['\"]?\s*[:=]\s*['\"]?)"
                          r"(?:(?:Bearer|Basic|Token|AWS4-HMAC-SHA256|SharedKey)\s+)?[^'\"\s,}]*", re.IGNORECASE)
_MIN_SECRET = 4   # shorter values would mask common text; no real credential is this short


def _mask_userinfo(m: re.Match) -> str:
    if m.group(1).lower() in _CONTAINER_AT and ":" not in m.group(2):
        return m.group(0)
    return m.group(1) + REDACTED + "@"


def redact_url(url: Any) -> Any:
    """``url`` without the user and password of its userinfo and with its query values redacted;
    a non-string (or a plain path) is returned as is.  A glob's ``?`` is kept (no ``=`` follows)."""
    if not isinstance(url, str):
        return url
    out = _USERINFO_AT_START.sub(_mask_userinfo, url)
    base, q, query = out.partition("?")
    if q and "=" in query:
        frag = ""
        if "#" in query:
            query, frag = query.split("#", 1)
            frag = "#" + frag
        parts = [p.split("=", 1)[0] + "=" + REDACTED if "=" in p else p for p in query.split("&")]
        out = base + "?" + "&".join(parts) + frag
    return out


def redact_options(options: Any, prefix: str = "") -> Any:
    """The record of ``storage_options``: keys at every depth, values only of :data:`SAFE_OPTIONS`."""
    if isinstance(options, dict):
        out = {}
        for k, v in options.items():
            path = f"{prefix}{k}"
            if isinstance(v, dict):
                out[k] = redact_options(v, path + ".")
            elif path in SAFE_OPTIONS and (v is None or isinstance(v, (bool, int, float, str))):
                out[k] = redact_url(v) if str(k) in _URL_OPTIONS else v
            else:
                out[k] = REDACTED
        return out
    return REDACTED


def redact_record(config: dict) -> dict:
    """A config dict (``RunConfig.to_dict(redact=False)``) as it may be recorded or printed:
    storage options at the top and in ``input`` by :func:`redact_options`; input and output
    URLs (and the run ``execution.reuse`` names) by :func:`redact_url`."""
    out = json.loads(json.dumps(config, default=str))
    if "storage_options" in out:
        out["storage_options"] = redact_options(out["storage_options"] or {})
    inp = out.get("input")
    if isinstance(inp, dict):
        if "storage_options" in inp:
            inp["storage_options"] = redact_options(inp["storage_options"] or {})
        for key in ("paths", "candidates", "references"):
            v = inp.get(key)
            if isinstance(v, list):
                inp[key] = [redact_url(x) for x in v]
            else:
                inp[key] = redact_url(v) if key in inp else v
    outp = out.get("output")
    if isinstance(outp, dict) and "url" in outp:
        outp["url"] = redact_url(outp["url"])
    ex = out.get("execution")
    if isinstance(ex, dict) and ex.get("reuse"):
        ex["reuse"] = redact_url(ex["reuse"])
    return out


def without_redacted(options: Any) -> Any:
    """A recorded ``storage_options`` mapping with every redacted value dropped (what a later
    reader, e.g. ``compare``, can still pass to fsspec; credentials come from its environment and
    its own storage options).  A value is dropped when it is :data:`REDACTED` or holds it anywhere
    (a list, a string); a URL option (``endpoint_url``) loses its redacted parts
    (:func:`without_redacted_url`) instead.  A mapping left empty is dropped; a record that is not
    a mapping gives ``{}``.  No value returned holds :data:`REDACTED`."""
    if not isinstance(options, dict):
        return {}
    out = {}
    for k, v in options.items():
        if isinstance(v, dict):
            v = without_redacted(v)
            if v:
                out[k] = v
        elif isinstance(v, str) and str(k) in _URL_OPTIONS:
            v = without_redacted_url(v)
            if v and REDACTED not in v:
                out[k] = v
        elif REDACTED not in json.dumps(v, default=str):
            out[k] = v
    return out


def without_redacted_url(url: Any) -> Any:
    """A recorded URL (:func:`redact_url`) as a later reader may open it: a redacted userinfo
    (``s3://<redacted>@bucket/x``) and every query parameter whose value was redacted are dropped,
    so no placeholder reaches fsspec as a user, password or signature (fsspec turns a URL's
    userinfo into options); the reader's own options and environment supply the credentials.
    A non-string is returned as is."""
    if not isinstance(url, str) or REDACTED not in url:
        return url
    m = re.match(rf"^({_SCHEME})([^/?#]*)@", url)
    if m and REDACTED in m.group(2):
        url = m.group(1) + url[m.end():]
    base, q, query = url.partition("?")
    if q:
        frag = ""
        if "#" in query:
            query, frag = query.split("#", 1)
            frag = "#" + frag
        kept = [p for p in query.split("&") if REDACTED not in p]
        url = base + ("?" + "&".join(kept) if kept else "") + frag
    return url


class HiddenOptions(dict):
    """Storage options whose repr shows only their keys: they travel as task arguments, which
    Dask's workers log (repr) when a task fails."""

    def __repr__(self) -> str:
        return f"<storage options: {', '.join(map(str, self))}>"

    __str__ = __repr__


def _leaves(obj: Any, prefix: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, f"{prefix}{k}.")
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _leaves(v, prefix)      # a list's items share their key's path
    else:
        yield prefix[:-1], obj


def _url_secrets(url: Any) -> list[str]:
    if not isinstance(url, str):
        return []
    found = []
    m = _USERINFO_AT_START.match(url)
    if m and _mask_userinfo(m) != m.group(0):
        found += [m.group(2), *m.group(2).split(":", 1)]
    _, q, query = url.partition("?")
    if q and "=" in query:
        found += [p.split("=", 1)[1].split("#", 1)[0] for p in query.split("&") if "=" in p]
    return found


def _escaped(s: str, depth: int = 2) -> set[str]:
    """``s`` and its forms inside a JSON string or a ``repr()``, nested up to ``depth`` times."""
    forms, last = {s}, {s}
    for _ in range(depth):
        last = {f for v in last for f in (json.dumps(v)[1:-1], repr(v)[1:-1],
                                          json.dumps(v, ensure_ascii=False)[1:-1])} - forms
        forms |= last
    return forms


class Redactor:
    """Masks known secret values and credential-shaped substrings in text."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> "Redactor":
        variants = set(self.secrets)
        for s in secrets:
            if not isinstance(s, str) or len(s) < _MIN_SECRET:
                continue
            # as written, and as JSON or repr() would escape it inside a message, once or twice
            # (a JSON message quoting a repr, a repr of a JSON document)
            variants.update(_escaped(s))
        self.secrets = sorted((v for v in variants if len(v) >= _MIN_SECRET), key=len, reverse=True)
        return self

    def add_config(self, config: dict) -> "Redactor":
        """Every non-allow-listed storage-option value and every URL secret of a config dict."""
        found: list[str] = []
        for so in (config.get("storage_options"), (config.get("input") or {}).get("storage_options")):
            for path, v in _leaves(so or {}):
                if path not in SAFE_OPTIONS and v is not None and not isinstance(v, bool):
                    found.append(str(v))
                    if isinstance(v, str) and "=" in v:   # connection strings: each value too
                        found += [p.split("=", 1)[1] for p in v.split(";") if "=" in p]
                elif path in SAFE_OPTIONS:
                    found += _url_secrets(v)
        inp = config.get("input") or {}
        for key in ("paths", "candidates", "references"):
            v = inp.get(key)
            for u in (v if isinstance(v, list) else [v]):
                found += _url_secrets(u)
        found += _url_secrets((config.get("output") or {}).get("url"))
        return self.add(found)

    def text(self, s: str) -> str:
        if not s:
            return s
        for secret in self.secrets:
            if secret in s:
                s = s.replace(secret, REDACTED)
        s = _USERINFO_IN_TEXT.sub(_mask_userinfo, s)
        s = _QUERY_VALUE.sub(lambda m: m.group(1) + REDACTED, s)
        s = _KEYED_SECRET.sub(lambda m: m.group(1) + REDACTED, s)
        return _AUTH_HEADER.sub(lambda m: m.group(1) + REDACTED, s)


class _MaskedStream:
    """A text stream that writes through a :class:`Redactor` (everything else delegated)."""

    def __init__(self, stream, redactor: Redactor):
        self._stream = stream
        self._redactor = redactor

    def write(self, s):
        return self._stream.write(self._redactor.text(s) if isinstance(s, str) else s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


_ACTIVE: list[Redactor] = []


def active() -> Redactor | None:
    """The redactor of the innermost :func:`masked_std` (``None`` outside one)."""
    return _ACTIVE[-1] if _ACTIVE else None


def mask(s: str) -> str:
    """``s`` through the active redactor (the credential-shaped patterns only, outside one)."""
    return (active() or Redactor()).text(s)


@contextlib.contextmanager
def masked_std(redactor: Redactor | None = None):
    """This process's stdout and stderr through ``redactor`` for the block (also for logging
    handlers made inside it, which keep the wrapped stream)."""
    redactor = redactor or Redactor()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _MaskedStream(old[0], redactor), _MaskedStream(old[1], redactor)
    _ACTIVE.append(redactor)
    try:
        yield redactor
    finally:
        _ACTIVE.pop()
        sys.stdout, sys.stderr = old
