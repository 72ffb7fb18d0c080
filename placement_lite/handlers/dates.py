"""HTTP dates: ``Last-Modified`` and ``Cache-Control`` (from 1.15)."""

import datetime
import email.utils

from placement_lite import microversion

def http_date(moment):
    """An HTTP date for a naive UTC datetime."""
    return email.utils.format_datetime(
        moment.replace(tzinfo=datetime.timezone.utc), usegmt=True)


def set_last_modified(req, resp, moment):
    """From 1.15: ``last-modified`` (``moment`` or now) and ``cache-control``."""
    if microversion.of(req) < microversion.LAST_MODIFIED:
        return
    moment = moment or datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None)
    resp.set_header('last-modified', http_date(moment))
    resp.set_header('cache-control', 'no-cache')


def newest(*moments):
    """The latest of some created_at/updated_at values (None ignored)."""
    present = [m for m in moments if m is not None]
    return max(present) if present else None
