"""Union read of Apache Fluss tables from Python.

Two ways in:

* with datafusion-python 55, register the catalog (or one table) and use SQL or
  DataFrames; projection and filters are pushed into the Fluss scan::

      import datafusion, fluss_datafusion
      ctx = datafusion.SessionContext()
      ctx.register_catalog_provider("fluss", fluss_datafusion.FlussCatalog(store="./fluss-data"))
      ctx.sql("SELECT count(*) FROM fluss.fluss.orders").show()

* with pyarrow alone: ``fluss_datafusion.sql(query, store=...)`` returns a
  ``pyarrow.Table`` (writes, DDL and ``CALL fluss.tier`` too), and
  ``sql_reader`` a ``pyarrow.RecordBatchReader`` that Polars and DuckDB read
  directly.
"""

from importlib import metadata as _metadata

from ._fluss_datafusion import (
    DATAFUSION_FFI_MAJOR,
    FlussCatalog,
    FlussError,
    FlussTable,
    Session,
    __version__,
)

__all__ = [
    "DATAFUSION_FFI_MAJOR",
    "FlussCatalog",
    "FlussError",
    "FlussTable",
    "Session",
    "sql",
    "sql_reader",
    "__version__",
]


def _check_datafusion(version_of=_metadata.version):
    """Refuses a ``datafusion`` package of another major than this build's FFI.

    datafusion-python never compares the FFI version of a provider it loads, and a
    mismatch is undefined behaviour (a crash at best), so it is refused here, at
    import. Without ``datafusion`` installed there is nothing to check: the pyarrow
    API needs none. Returns the installed version, or None.
    """
    try:
        installed = version_of("datafusion")
    except _metadata.PackageNotFoundError:
        return None
    major = installed.split(".", 1)[0]
    if not major.isdigit() or int(major) != DATAFUSION_FFI_MAJOR:
        raise ImportError(
            f"fluss_datafusion {__version__} is built for datafusion {DATAFUSION_FFI_MAJOR}.x "
            f"(datafusion-ffi major {DATAFUSION_FFI_MAJOR}), but datafusion {installed} is "
            f"installed; its providers cannot load into it. Install "
            f"'datafusion=={DATAFUSION_FFI_MAJOR}.*', or uninstall datafusion to use only "
            f"the pyarrow API (fluss_datafusion.sql)."
        )
    return installed


_check_datafusion()


def _session(store, bootstrap_servers, lake_options, database, create):
    return Session(
        store,
        bootstrap_servers=bootstrap_servers,
        lake_options=lake_options,
        database=database,
        create=create,
    )


def sql(query, store=None, *, bootstrap_servers=None, lake_options=None, database=None,
        create=False):
    """Runs one statement on a LocalStore (``store``) or a cluster and returns its rows
    as a ``pyarrow.Table``. For many statements, keep a :class:`Session`."""
    return _session(store, bootstrap_servers, lake_options, database, create).sql(query)


def sql_reader(query, store=None, *, bootstrap_servers=None, lake_options=None,
               database=None):
    """Runs a query and returns a ``pyarrow.RecordBatchReader`` over its rows, produced
    as they are read (an Arrow C stream: ``polars.from_arrow``, ``duckdb`` read it)."""
    return _session(store, bootstrap_servers, lake_options, database, False).sql_reader(query)
