#!/usr/bin/env bash
# Creates the SCRAM-SHA-512 users of docker/compose.secure.yaml on the running broker, as the
# super user admin (PLAIN): the one-shot `users` service, in the Kafka image. The names and
# passwords come from scram-users, written by make-secrets.sh. Idempotent: an existing user's
# credential is set again to the same password.
set -euo pipefail

BOOTSTRAP=${BOOTSTRAP:-kafka:19092}
CONFIG=${CONFIG:-/mnt/shared/config}
TOOLS=${TOOLS:-/opt/kafka/bin}

while read -r name password; do
  "$TOOLS/kafka-configs.sh" --bootstrap-server "$BOOTSTRAP" \
    --command-config "$CONFIG/admin.properties" --alter --entity-type users \
    --entity-name "$name" --add-config "SCRAM-SHA-512=[password=$password]"
done <"$CONFIG/scram-users"
echo "users: $(cut -d' ' -f1 "$CONFIG/scram-users" | tr '\n' ' ')created or updated"
