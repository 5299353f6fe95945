"""Files a source's records name by URL outside the hub, fetched over https into a cache.

Pango's rows name their events documents (and those documents their screenshots) on the
collector's storage bucket, not in the hub repository; in hub mode the raw stage fetches them
with `Fetcher`, and the raw manifest records each copy with its size and sha256.

- https only, and only from the hosts the source's declaration allows (`SourceSpec.remote_hosts`,
  `host` or `host:port`); a redirect is followed only to such a URL. Anything else is refused
  by name (`Refusal`) without a request.
- No credential is ever sent: the hub token stays with huggingface_hub.
- Certificates are always verified: against `RemoteSettings.ca_bundle` when given, else the
  system store (OpenSSL's default paths, which honour SSL_CERT_FILE and SSL_CERT_DIR).
- A dropped connection (a body shorter than its Content-Length included: http.client hands a
  cut body over as is), a timeout (`timeout_s`, each connect and read) or a 5xx / 429 answer is
  retried with exponential backoff; 404 / 410 is `Refusal.NOT_FOUND` (the record that needs the
  file is dropped by the adapter); any other status, an untrusted certificate, or a failure
  outlasting the retries raises RawInputError naming the URL: the partition fails, loudly.
- Size cap: a declared Content-Length over `max_bytes` is refused before the body is read, and
  a body is cut off as soon as it passes the cap (`Refusal.TOO_LARGE`).
- The cache is keyed by the URL (`k` = sha256 of it): `<cache>/<k[:2]>/<k>` and beside it
  `<k>.json` with the URL, size and sha256. A cached copy is used only while its size and sha256
  still match, so a rerun fetches only what is missing; bodies are written to a temp name and
  renamed. Refusals are not cached: a file missing today is asked for again on the next run.

`References` is the other side, for adapters: the bytes a record's reference names, a repo path
under the repo folder (never outside it), a URL read in a mirror as the mirror file its path
part names, and in hub mode as its fetched copy, whose size and sha256 are checked against the
manifest again (a changed cache fails the partition by name).
"""

from __future__ import annotations

import enum
import hashlib
import http.client
import json
import ssl
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO
from urllib.parse import quote, unquote, urljoin, urlsplit

from gui_assets.core.atomic import atomic_path, atomic_write_text, sha256_file
from gui_assets.core.drops import Drop, DropReason
from gui_assets.sources.mirror import RawInputError, RawPartition

MAX_REDIRECTS = 5
_CHUNK = 1 << 16
_SAFE = "/%:@!$&'()*+,;=~?"  # kept as they are in a request target; spaces and non-ASCII are %-encoded


class Refusal(enum.StrEnum):
    """Why a URL has no fetched copy (the raw manifest's `refused` values)."""

    NOT_FOUND = "not_found"  # the server answered 404 or 410
    NOT_HTTPS = "not_https"  # another scheme (http://, s3://, ...): never requested
    HOST_NOT_ALLOWED = "host_not_allowed"  # a host the declaration does not allow (or a redirect to one)
    MALFORMED_URL = "malformed_url"  # no host, or a port that is no number
    TOO_LARGE = "too_large"  # over RemoteSettings.max_bytes


@dataclass(frozen=True, slots=True)
class RemoteSettings:
    """How remote files are fetched; none of it changes the bytes of a fetched file."""

    ca_bundle: Path | None = None  # PEM file of trusted CAs; None: the system store
    max_bytes: int = 64 << 20  # a screenshot or an events document; more is refused
    timeout_s: float = 30.0  # each connect and each read
    retries: int = 4  # further attempts after a dropped connection, a timeout, 5xx or 429
    backoff_s: float = 1.0  # the first wait; doubled each attempt, at most 60 s
    workers: int = 8  # files fetched at once


@dataclass(frozen=True, slots=True)
class Fetched:
    """One URL's outcome: its cached copy, or why there is none."""

    url: str
    local: Path | None = None
    size: int = 0
    sha256: str = ""
    refused: Refusal | None = None


class _Retryable(Exception):
    """A failure another attempt may not meet (dropped connection, timeout, 5xx, 429)."""


class _TooLarge(Exception):
    """The body passed the size cap while it was read."""


def url_key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


def _host_port(entry: str) -> tuple[str, int]:
    """An allowed-host entry, `host` (port 443) or `host:port`, as (host, port)."""
    host, sep, port = entry.strip().lower().rpartition(":")
    return (host, int(port)) if sep else (port, 443)


class Fetcher:
    """Fetch https URLs from allowed hosts into a URL-keyed, verified cache."""

    def __init__(
        self, cache: Path, allowed_hosts: Iterable[str], settings: RemoteSettings | None = None
    ) -> None:
        self.cache = cache
        self.settings = settings or RemoteSettings()
        self.allowed = {_host_port(h) for h in allowed_hosts}
        ca = self.settings.ca_bundle
        self._context = ssl.create_default_context(cafile=str(ca) if ca is not None else None)
        self._lock = threading.Lock()
        self.requests = 0  # GETs sent, every attempt and redirect counted

    def refusal(self, url: str) -> Refusal | None:
        """Why this URL may not be requested at all; None when it may."""
        try:
            url.encode("utf-8")  # a lone surrogate cannot be sent
            parts = urlsplit(url)
            port = parts.port or 443
        except ValueError:
            return Refusal.MALFORMED_URL
        if any(c < " " or c == "\x7f" for c in url):  # a control character
            return Refusal.MALFORMED_URL
        if parts.scheme.lower() != "https":
            return Refusal.NOT_HTTPS
        if not parts.hostname:
            return Refusal.MALFORMED_URL
        if (parts.hostname.lower(), port) not in self.allowed:
            return Refusal.HOST_NOT_ALLOWED
        return None

    def fetch_all(self, urls: Iterable[str]) -> dict[str, Fetched]:
        """Every URL's outcome, by URL; the first RawInputError stops the rest and is raised."""
        wanted = sorted(set(urls))
        pool = ThreadPoolExecutor(max_workers=max(1, self.settings.workers))
        try:
            futures = {u: pool.submit(self.fetch, u) for u in wanted}
            return {u: f.result() for u, f in futures.items()}
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def fetch(self, url: str) -> Fetched:
        """The URL's verified cached copy, fetched first when missing; or its refusal."""
        refused = self.refusal(url)
        if refused is not None:
            return Fetched(url, refused=refused)
        key = url_key(url)
        final = self.cache / key[:2] / key
        return self._cached(url, final) or self._download(url, final)

    def _cached(self, url: str, final: Path) -> Fetched | None:
        try:
            meta = json.loads(final.with_name(final.name + ".json").read_text(encoding="utf-8"))
            size = final.stat().st_size
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("url") != url or meta.get("size") != size:
            return None
        sha = sha256_file(final)
        return Fetched(url, final, size, sha) if sha == meta.get("sha256") else None

    def _download(self, url: str, final: Path) -> Fetched:
        s = self.settings
        failure = ""
        for attempt in range(s.retries + 1):
            if attempt:
                time.sleep(min(s.backoff_s * 2 ** (attempt - 1), 60.0))
            try:
                return self._get(url, url, final, 0)
            except _Retryable as e:
                failure = str(e)
        raise RawInputError(f"fetching {url} failed {s.retries + 1} times; last: {failure}")

    def _get(self, url: str, at: str, final: Path, hops: int) -> Fetched:
        """One attempt at `url` (now requesting `at`, after `hops` redirects)."""
        parts = urlsplit(at)
        conn = http.client.HTTPSConnection(
            parts.hostname or "", parts.port or 443, timeout=self.settings.timeout_s, context=self._context
        )
        target = quote(parts.path or "/", safe=_SAFE) + (
            f"?{quote(parts.query, safe=_SAFE)}" if parts.query else ""
        )
        with self._lock:
            self.requests += 1
        try:
            conn.request("GET", target, headers={"User-Agent": "gui_assets", "Accept-Encoding": "identity"})
            resp = conn.getresponse()
            if resp.status in (301, 302, 303, 307, 308):
                return self._redirect(url, at, resp.getheader("Location"), final, hops)
            if resp.status in (404, 410):
                return Fetched(url, refused=Refusal.NOT_FOUND)
            if resp.status == 429 or resp.status >= 500:
                raise _Retryable(f"HTTP {resp.status} from {at}")
            if resp.status != 200:
                raise RawInputError(f"fetching {url}: HTTP {resp.status} {resp.reason} from {at}")
            return self._store(url, resp, final)
        except ssl.SSLCertVerificationError as e:
            raise RawInputError(f"fetching {url}: certificate not trusted ({e.verify_message})") from None
        except (OSError, http.client.HTTPException) as e:  # dropped, reset, timed out, cut short
            raise _Retryable(f"{type(e).__name__}: {e}") from None
        finally:
            conn.close()

    def _redirect(self, url: str, at: str, location: str | None, final: Path, hops: int) -> Fetched:
        if not location:
            raise RawInputError(f"fetching {url}: a redirect from {at} without a Location")
        if hops >= MAX_REDIRECTS:
            raise RawInputError(f"fetching {url}: more than {MAX_REDIRECTS} redirects")
        nxt = urljoin(at, location)
        refused = self.refusal(nxt)
        if refused is not None:  # never followed off https or off the allowed hosts
            return Fetched(url, refused=refused)
        return self._get(url, nxt, final, hops + 1)

    def _store(self, url: str, resp: http.client.HTTPResponse, final: Path) -> Fetched:
        cap = self.settings.max_bytes
        declared = (resp.getheader("Content-Length") or "").strip()
        if declared.isdigit() and int(declared) > cap:
            return Fetched(url, refused=Refusal.TOO_LARGE)
        try:
            with atomic_path(final) as tmp, open(tmp, "wb") as out:
                size, sha = _copy_capped(resp, out, cap)
                if declared.isdigit() and size != int(declared):  # http.client returns a cut body as is
                    raise _Retryable(f"{size} of {declared} bytes before the connection ended")
        except _TooLarge:
            return Fetched(url, refused=Refusal.TOO_LARGE)
        atomic_write_text(
            final.with_name(final.name + ".json"), json.dumps({"url": url, "size": size, "sha256": sha})
        )
        return Fetched(url, final, size, sha)


def _copy_capped(resp: http.client.HTTPResponse, out: BinaryIO, cap: int) -> tuple[int, str]:
    """Copy a response body, hashing it; _TooLarge once it passes `cap` bytes."""
    digest = hashlib.sha256()
    size = 0
    while chunk := resp.read(_CHUNK):
        size += len(chunk)
        if size > cap:
            raise _TooLarge
        digest.update(chunk)
        out.write(chunk)
    return size, digest.hexdigest()


# --- reading what records reference ------------------------------------------------------


def repo_path(ref: str) -> PurePosixPath | None:
    """A repo path, or a URL's percent-decoded path part, that stays under the repo folder;
    None when it would leave it (`..`), holds a NUL or names what no file system holds."""
    try:
        rel = unquote(urlsplit(ref).path) if "://" in ref else ref
    except ValueError:
        return None
    p = PurePosixPath(rel.lstrip("/"))
    if not p.parts or ".." in p.parts or "\x00" in rel or len(rel) > 4096:
        return None
    return None if any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in p.parts) else p


def fetch_target(ref: str) -> str | None:
    """A reference as the raw stage fetches it: the URL, or the repo path; None when unsafe."""
    if "://" in ref:
        return ref
    p = repo_path(ref)
    return p.as_posix() if p is not None else None


def peek(root: Path, fetched: Mapping[str, Path], ref: str) -> bytes | None:
    """What a reference names, if the raw stage has it so far (for `remote_files` hooks)."""
    p = repo_path(ref) if "://" not in ref else None
    path = fetched.get(ref) if "://" in ref else root / p if p is not None else None
    try:
        return path.read_bytes() if path is not None else None
    except (OSError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class RefReasons:
    """What a failed reference is counted as: absent, leaving the repo, or refused a fetch."""

    missing: DropReason
    unsafe: DropReason
    refused: DropReason


class References:
    """The bytes the records of a raw partition reference (see the module docstring)."""

    def __init__(self, raw: RawPartition) -> None:
        self.root = raw.root
        self.hub = raw.mode == "hub"
        self.remote = {f.path: f for f in raw.remote}
        self.refused = raw.refused

    def read(self, ref: str, why: RefReasons) -> bytes:
        if self.hub and "://" in ref:
            return self._fetched(ref, why)
        p = repo_path(ref)
        if p is None:
            raise Drop(why.unsafe, ref[:200])
        try:
            return (self.root / p).read_bytes()
        except (OSError, ValueError):  # absent, a directory, unreadable, an unencodable name
            raise Drop(why.missing, ref[:200]) from None

    def _fetched(self, url: str, why: RefReasons) -> bytes:
        f = self.remote.get(url)
        if f is None:  # 404, refused, or never named to the raw stage: no copy either way
            cause = self.refused.get(url, Refusal.NOT_FOUND)
            raise Drop(why.missing if cause == Refusal.NOT_FOUND else why.refused, f"{url[:200]}: {cause}")
        try:
            data = f.local.read_bytes()
        except OSError as e:
            raise RawInputError(
                f"{url}: its fetched copy {f.local} cannot be read ({e}); rerun raw"
            ) from None
        if len(data) != f.size or hashlib.sha256(data).hexdigest() != f.sha256:
            raise RawInputError(f"{url}: its fetched copy {f.local} changed since the raw stage; rerun raw")
        return data
