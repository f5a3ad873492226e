#!/usr/bin/env bash
# The secrets of docker/compose.secure.yaml, made on its first start by the one-shot `secrets`
# service (the Kafka image: bash and the JDK's keytool) and kept in its volumes; a later start
# finds them and changes nothing. Delete the volumes (`docker compose ... down -v`) to make new
# ones.
#
# Under $OUT (default /secrets), one folder per volume, each mounted only where it is needed:
#   kafka/         the broker's: broker.p12 (its key and certificate for kafka, localhost and
#                  127.0.0.1, signed by the CA), server.properties (the keystore password and
#                  the JAAS logins of the PLAIN users broker and admin; appended to by the
#                  image's KAFKA_* variables), admin.properties (the super user, for the health
#                  check and create-users.sh), scram-users (name and password of each role)
#   admin/         client.properties of the super user (PLAIN), for `partita acls --apply`
#   <role>/        for the roles the compose services run (engine, analytics, exporter,
#                  operator, gateway): client.properties logging in as User:<role> with SCRAM-SHA-512
#   applications/  client.properties and job-worker.properties for your own producers and job
#                  workers on the host (bootstrap.servers=localhost:9092)
# and ca.pem, the CA's certificate (the truststore of every client), in each folder.
#
# Passwords are 32 random letters and digits. Files are written with umask 077; run as root,
# the script gives the kafka folder to the image's user (uid 1000) and makes each role's files
# readable in the role's own volume, which only that role's containers mount.
set -euo pipefail

OUT=${OUT:-/secrets}
ROLES=(engine analytics exporter operator client job-worker gateway)
SERVICE_ROLES=(engine analytics exporter operator gateway)
DAYS=825

if [[ -f "$OUT/kafka/server.properties" ]]; then
  echo "secrets: found in $OUT, keeping them"
  exit 0
fi
umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$OUT/kafka" "$OUT/admin" "$OUT/applications"
for role in "${SERVICE_ROLES[@]}"; do mkdir -p "$OUT/$role"; done

password() { head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 32; }

store=$(password)
echo "secrets: a CA and the broker's certificate (keytool)"
keytool -genkeypair -alias ca -dname "CN=Partita compose CA" -keyalg EC -groupname secp256r1 \
  -validity "$DAYS" -ext bc:c -keystore "$work/ca.p12" -storetype PKCS12 -storepass "$store"
keytool -exportcert -rfc -alias ca -keystore "$work/ca.p12" -storepass "$store" \
  -file "$work/ca.pem"
keytool -genkeypair -alias broker -dname "CN=kafka" -keyalg EC -groupname secp256r1 \
  -validity "$DAYS" -keystore "$OUT/kafka/broker.p12" -storetype PKCS12 -storepass "$store"
keytool -certreq -alias broker -keystore "$OUT/kafka/broker.p12" -storepass "$store" \
  -file "$work/broker.csr"
keytool -gencert -alias ca -keystore "$work/ca.p12" -storepass "$store" -rfc \
  -infile "$work/broker.csr" -outfile "$work/broker.pem" -validity "$DAYS" \
  -ext SAN=dns:kafka,dns:localhost,ip:127.0.0.1 -ext EKU=serverAuth
keytool -importcert -noprompt -alias ca -file "$work/ca.pem" \
  -keystore "$OUT/kafka/broker.p12" -storepass "$store"
keytool -importcert -alias broker -file "$work/broker.pem" \
  -keystore "$OUT/kafka/broker.p12" -storepass "$store"
# the CA's key is not kept: nothing else is ever signed with it

broker=$(password)
admin=$(password)
plain="org.apache.kafka.common.security.plain.PlainLoginModule required"
scram="org.apache.kafka.common.security.scram.ScramLoginModule required"
cat >"$OUT/kafka/server.properties" <<EOF
# Written by docker/secure/make-secrets.sh; the KAFKA_* variables of compose.secure.yaml follow.
ssl.keystore.type=PKCS12
ssl.keystore.location=/mnt/shared/config/broker.p12
ssl.keystore.password=$store
listener.name.internal.plain.sasl.jaas.config=$plain username="broker" password="$broker" user_broker="$broker" user_admin="$admin";
listener.name.internal.scram-sha-512.sasl.jaas.config=$scram;
listener.name.external.scram-sha-512.sasl.jaas.config=$scram;
listener.name.controller.plain.sasl.jaas.config=$plain username="broker" password="$broker" user_broker="$broker";
EOF

# login FILE MECHANISM-MODULE MECHANISM USER PASSWORD CA [BOOTSTRAP]
login() {
  {
    echo "# Written by docker/secure/make-secrets.sh: User:$4 ($3). Secret: keep it private."
    if [[ -n "${7-}" ]]; then echo "bootstrap.servers=$7"; fi
    echo "security.protocol=SASL_SSL"
    echo "sasl.mechanism=$3"
    echo "sasl.jaas.config=$2 username=\"$4\" password=\"$5\";"
    echo "ssl.truststore.type=PEM"
    echo "ssl.truststore.location=$6"
  } >"$1"
}

login "$OUT/kafka/admin.properties" "$plain" PLAIN admin "$admin" /mnt/shared/config/ca.pem
login "$OUT/admin/client.properties" "$plain" PLAIN admin "$admin" /etc/partita/kafka/ca.pem
: >"$OUT/kafka/scram-users"
for role in "${ROLES[@]}"; do
  secret=$(password)
  echo "$role $secret" >>"$OUT/kafka/scram-users"
  if [[ -d "$OUT/$role" ]]; then
    login "$OUT/$role/client.properties" "$scram" SCRAM-SHA-512 "$role" "$secret" \
      /etc/partita/kafka/ca.pem
  else
    login "$OUT/applications/$role.properties" "$scram" SCRAM-SHA-512 "$role" "$secret" \
      ca.pem localhost:9092
  fi
done
for folder in kafka admin applications "${SERVICE_ROLES[@]}"; do
  cp "$work/ca.pem" "$OUT/$folder/ca.pem"
done

if [[ $(id -u) == 0 ]]; then
  chown -R 1000:1000 "$OUT/kafka"
  for folder in admin applications "${SERVICE_ROLES[@]}"; do
    chmod 0755 "$OUT/$folder"
    chmod 0444 "$OUT/$folder"/*
  done
fi
echo "secrets: written to $OUT (CA, broker certificate, users ${ROLES[*]}, admin)"
