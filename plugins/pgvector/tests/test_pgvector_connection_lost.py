"""Which of psycopg's errors say the connection is gone: connection-class states and shutdowns, not the server's refusals."""

from __future__ import annotations

import psycopg
import psycopg.errors as errors
import pytest

from ragloom_pgvector.store import _connection_lost


@pytest.mark.parametrize("error", [errors.ConnectionFailure, errors.SqlclientUnableToEstablishSqlconnection, errors.AdminShutdown, errors.CrashShutdown])
def test_connection_states_and_shutdowns_are_a_lost_connection(error: type[psycopg.Error]) -> None:
    assert _connection_lost(error("gone"))


def test_an_operational_error_without_a_state_is_a_lost_connection() -> None:
    assert _connection_lost(psycopg.OperationalError("server closed the connection unexpectedly"))


@pytest.mark.parametrize("error", [errors.LockNotAvailable, errors.QueryCanceled, errors.DeadlockDetected, errors.UniqueViolation])
def test_the_servers_refusals_are_not(error: type[psycopg.Error]) -> None:
    assert not _connection_lost(error("refused"))


def test_no_cause_is_not() -> None:
    assert not _connection_lost(None)
