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
from sqlalchemy.dialects import postgresql as pg

from placement_lite.db import tables

rp = tables.resource_providers
#: Query: ids of root providers.
ROOTS = sa.select(rp.c.id).where(rp.c.parent_provider_id.is_(None))


def list_param(name):
    """A parameter taking a list, for ``IN``."""
    return sa.bindparam(name, expanding=True)


def one_of(column, name, postgresql=False):
    """SQL: ``column`` is one of the values of the list parameter
    ``name``. On PostgreSQL (``postgresql``) an array: one parameter,
    which psycopg2 writes out as the statement is sent; elsewhere an
    ``IN`` of a parameter per value, made by SQLAlchemy as it runs the
    statement (half a millisecond of a request's time for a hundred
    aggregates)."""
    if postgresql:
        return column == sa.any_(sa.bindparam(name,
                                              type_=pg.ARRAY(column.type)))
    return column.in_(list_param(name))


@functools.cache
def linked_to_each(link_table, column, sets, roots_only=False,
                   with_forbidden=False, with_roots=False, postgresql=False):
    """Query: ids of providers (root providers, with ``roots_only``; with
    ``with_roots``, each with its root's id) with, for each of ``sets``
    sets of ids, a row of ``link_table`` (provider traits or aggregates)
    whose ``column`` is in it, and, with ``with_forbidden``, none whose
    ``column`` is among the forbidden ids. Its parameters: each_params();
    ``postgresql``: see one_of."""
    query = sa.select(rp.c.id, rp.c.root_provider_id) if with_roots else (
        sa.select(rp.c.id))
    if roots_only:
        query = query.where(rp.c.parent_provider_id.is_(None))
    query = query.where(*linked_to_each_condition(link_table, column, sets,
                                                  postgresql))
    if with_forbidden:
        query = query.where(rp.c.id.not_in(
            _linked(link_table, column, column + '_forbidden', postgresql)))
    return query


@functools.cache
def linked_to_each_condition(link_table, column, sets, postgresql=False):
    """What linked_to_each asks of a provider, as conditions on the
    column ``resource_providers.id`` of a statement of its own (the
    provider listing): one per set."""
    return tuple(
        rp.c.id.in_(_linked(link_table, column, '%s_set_%d' % (column, n),
                            postgresql))
        for n in range(sets))


@functools.cache
def linked_to_all_sets(link_sets):
    """What a provider listing asks of its link filters together, as one
    condition on ``resource_providers.id``: for each (link table, column,
    number of sets) of ``link_sets``, a row of the table whose column is in
    each set (the parameters of each_params()).

    The first set's links lead and the others are asked of each provider
    they find (a correlated EXISTS each), so PostgreSQL joins the link
    rows without first making the members of a large set unique: the
    sharing providers of a host's aggregates at 20,000 hosts cost the
    backend 2.2 ms per request instead of 3.3, and no shape measured got
    slower (docs/benchmark.md)."""
    linked = []
    for link_table, column, sets in link_sets:
        for n in range(sets):
            linked.append((link_table.alias('link_%d' % len(linked)), column,
                           '%s_set_%d' % (column, n)))
    (lead, lead_column, lead_param), *others = linked
    query = sa.select(lead.c.resource_provider_id).where(
        one_of(lead.c[lead_column], lead_param))
    for table, column, param in others:
        query = query.where(sa.exists().where(
            table.c.resource_provider_id == lead.c.resource_provider_id,
            one_of(table.c[column], param)))
    return rp.c.id.in_(query)


def _linked(link_table, column, param, postgresql):
    """Query: ids of providers linked to one of the ids ``param``. (As
    ``IN`` a subquery: PostgreSQL plans it as a join from the links; a
    correlated EXISTS made the provider listing 20% slower.)"""
    return sa.select(link_table.c.resource_provider_id).where(
        one_of(link_table.c[column], param, postgresql))


def each_params(column, id_sets, forbidden_ids=()):
    """The parameters of linked_to_each for ``id_sets`` and
    ``forbidden_ids``."""
    params = {'%s_set_%d' % (column, n): sorted(ids)
              for n, ids in enumerate(id_sets)}
    if forbidden_ids:
        params[column + '_forbidden'] = sorted(forbidden_ids)
    return params


@functools.cache
def linked_to_any(link_table, column, postgresql=False):
    """Query: ids of providers with a row of ``link_table`` whose
    ``column`` is among the ids of any_params() (``postgresql``: see
    one_of)."""
    return (sa.select(link_table.c.resource_provider_id).distinct()
            .where(one_of(link_table.c[column], column + '_any',
                          postgresql)))


def any_params(column, ids):
    """The parameters of linked_to_any for ``ids``."""
    return {column + '_any': sorted(ids)}
