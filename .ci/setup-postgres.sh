#!/usr/bin/env bash
# Starts the local PostgreSQL cluster if it is not up and waits until it answers on 127.0.0.1:5432
# (database `test`, trust auth). Prints the URL the PostgreSQL tests use; exports nothing.
set -euo pipefail

HOST=127.0.0.1
PORT=5432
URL="postgres://postgres@${HOST}:${PORT}/test"

answers() { pg_isready -q -h "$HOST" -p "$PORT"; }

if ! answers; then
  version=$(ls /etc/postgresql | sort -V | tail -1)
  echo "starting PostgreSQL ${version} (cluster main)"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
fi

for _ in $(seq 1 60); do
  if answers; then
    psql -q -h "$HOST" -p "$PORT" -U postgres -d test -c 'SELECT 1' >/dev/null
    echo "PostgreSQL answers: HANGAR_TEST_DATABASE_URL=${URL}"
    exit 0
  fi
  sleep 0.5
done
echo "PostgreSQL did not answer on ${HOST}:${PORT} within 30 s" >&2
exit 1
