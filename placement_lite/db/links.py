"""Providers by their links: the traits they have, the aggregates they are
in. The one place these filters are written, for the allocation-candidates
filters (db.candidates) and the provider listing (db.providers).

Each filter is one statement per shape, built once and run with
parameters (building and keying a statement costs more than running the
small ones). Its parameters are named after the link column, so one
statement can hold a trait filter and an aggregate filter together.
"""

import functools

import sqlalchemy as sa

from placement_lite.db import tables

rp = tables.resource_providers
#: Query: ids of root providers.
ROOTS = sa.select(rp.c.id).where(rp.c.parent_provider_id.is_(None))


def list_param(name):
    """A parameter taking a list, for ``IN``."""
    return sa.bindparam(name, expanding=True)


@functools.cache
def linked_to_each(link_table, column, sets, roots_only=False,
                   with_forbidden=False):
    """Query: ids of providers (root providers, with ``roots_only``) with,
    for each of ``sets`` sets of ids, a row of ``link_table`` (provider
    traits or aggregates) whose ``column`` is in it, and, with
    ``with_forbidden``, none whose ``column`` is among the forbidden ids.
    Its parameters: each_params()."""
    query = ROOTS if roots_only else sa.select(rp.c.id)
    for n in range(sets):
        query = query.where(rp.c.id.in_(
            _linked(link_table, column, '%s_set_%d' % (column, n))))
    if with_forbidden:
        query = query.where(rp.c.id.not_in(
            _linked(link_table, column, column + '_forbidden')))
    return query


def _linked(link_table, column, param):
    """Query: ids of providers linked to one of the ids ``param``. (As
    ``IN`` a subquery: PostgreSQL plans it as a join from the links; a
    correlated EXISTS made the provider listing 20% slower.)"""
    return sa.select(link_table.c.resource_provider_id).where(
        link_table.c[column].in_(list_param(param)))


def each_params(column, id_sets, forbidden_ids=()):
    """The parameters of linked_to_each for ``id_sets`` and
    ``forbidden_ids``."""
    params = {'%s_set_%d' % (column, n): sorted(ids)
              for n, ids in enumerate(id_sets)}
    if forbidden_ids:
        params[column + '_forbidden'] = sorted(forbidden_ids)
    return params


@functools.cache
def linked_to_any(link_table, column):
    """Query: ids of providers with a row of ``link_table`` whose
    ``column`` is among the ids of any_params()."""
    return (sa.select(link_table.c.resource_provider_id).distinct()
            .where(link_table.c[column].in_(list_param(column + '_any'))))


def any_params(column, ids):
    """The parameters of linked_to_any for ``ids``."""
    return {column + '_any': sorted(ids)}
