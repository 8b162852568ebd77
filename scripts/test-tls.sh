#!/usr/bin/env bash
# Throwaway TLS material and a TLS terminator for the https tests (tests/e2e/tls_test.cpp).
#
#   scripts/test-tls.sh certs DIR
#       Two CAs (ca.pem, other-ca.pem) and three server certificates signed by ca.pem, each
#       with its key: good (localhost and 127.0.0.1, valid now), expired (the same names,
#       expired yesterday) and wronghost (other.example, valid now); and two client
#       certificates for mutual TLS: client (signed by ca.pem) and outsider (signed by
#       other-ca.pem). openssl only.
#   scripts/test-tls.sh stunnel-config DIR TARGET_PORT NAME=PORT...
#       DIR/stunnel.conf: stunnel in the foreground, one TLS service per NAME (a certificate
#       of `certs`) on 127.0.0.1:PORT, each forwarding plain HTTP to 127.0.0.1:TARGET_PORT.
#       NAME `mutual` serves the good certificate and requires a client certificate that
#       ca.pem signed.
set -euo pipefail

certs() {
  local out=$1
  mkdir -p "$out/ca-db"
  cd "$out"
  key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
  for ca in ca other-ca; do
    key "$ca.key"
    openssl req -x509 -new -key "$ca.key" -days 30 -subj "/CN=logitaudit test $ca" -out "$ca.pem" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  done
  : > ca-db/index.txt
  echo 1000 > ca-db/serial
  cat > ca.cnf <<'CNF'
[ ca ]
default_ca = test_ca
[ test_ca ]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
certificate = ca.pem
private_key = ca.key
default_md = sha256
policy = any_name
copy_extensions = copy
unique_subject = no
x509_extensions = server
[ any_name ]
commonName = supplied
[ server ]
basicConstraints = critical,CA:FALSE
extendedKeyUsage = serverAuth
[ client ]
basicConstraints = critical,CA:FALSE
extendedKeyUsage = clientAuth
CNF
  # openssl ca, because only it sets both dates (an expired certificate starts in the past).
  stamp() { date -u -d "$1" +%Y%m%d%H%M%SZ; }
  issue() {  # NAME SAN FROM UNTIL
    local first=${2%%,*}
    key "$1.key"
    openssl req -new -key "$1.key" -subj "/CN=${first#*:}" -addext "subjectAltName=$2" -out "$1.csr" 2>/dev/null
    openssl ca -batch -config ca.cnf -notext -startdate "$(stamp "$3")" -enddate "$(stamp "$4")" \
      -in "$1.csr" -out "$1.pem" 2>/dev/null
  }
  issue good "DNS:localhost,IP:127.0.0.1" "-1 day" "+30 days"
  issue expired "DNS:localhost,IP:127.0.0.1" "-30 days" "-1 day"
  issue wronghost "DNS:other.example" "-1 day" "+30 days"
  # Client certificates: one the mutual service trusts, one from the other CA.
  key client.key
  openssl req -new -key client.key -subj "/CN=logitaudit test client" -out client.csr 2>/dev/null
  openssl ca -batch -config ca.cnf -extensions client -notext -days 30 -in client.csr -out client.pem 2>/dev/null
  key outsider.key
  openssl req -new -key outsider.key -subj "/CN=logitaudit test outsider" -out outsider.csr 2>/dev/null
  openssl x509 -req -in outsider.csr -CA other-ca.pem -CAkey other-ca.key -CAcreateserial -days 30 \
    -out outsider.pem 2>/dev/null
}

stunnel_config() {
  local dir=$1 target=$2
  shift 2
  {
    echo "foreground = yes"
    echo "pid ="
    echo "output = $dir/stunnel.log"
    echo "debug = notice"
    for service in "$@"; do
      echo "[${service%%=*}]"
      echo "accept = 127.0.0.1:${service#*=}"
      echo "connect = 127.0.0.1:$target"
      if [[ ${service%%=*} == mutual ]]; then
        echo "cert = $dir/good.pem"
        echo "key = $dir/good.key"
        echo "CAfile = $dir/ca.pem"
        echo "requireCert = yes"
        echo "verifyChain = yes"
      else
        echo "cert = $dir/${service%%=*}.pem"
        echo "key = $dir/${service%%=*}.key"
      fi
    done
  } > "$dir/stunnel.conf"
}

case ${1:-} in
  certs) certs "$2" ;;
  stunnel-config) shift; stunnel_config "$@" ;;
  *) echo "usage: $0 certs DIR | stunnel-config DIR TARGET_PORT NAME=PORT..." >&2; exit 64 ;;
esac
