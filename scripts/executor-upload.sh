#!/usr/bin/env bash
# Uploads a file to Executor's blob store by content hash and prints its ref (sha256:<hex>),
# to use as a FileInput "ref" in POST /v1/execute. Skips the upload when the blob is present.
#
#   EXECUTOR_API_URL=http://127.0.0.1:8080 EXECUTOR_API_TOKEN=... scripts/executor-upload.sh FILE
#
# Flow: POST /v1/blobs/check -> PUT the bytes to the presigned uploadUrl (with the
# x-amz-checksum-sha256 header the URL's signature requires) -> POST /v1/blobs/finalize.
# Needs bash, curl and sha256sum (coreutils); uses jq when installed.
set -euo pipefail

die() { echo "executor-upload: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: EXECUTOR_API_URL=... EXECUTOR_API_TOKEN=... $0 FILE"
file=$1
[ -f "$file" ] || die "not a regular file: $file"
api=${EXECUTOR_API_URL:-http://127.0.0.1:8080}
api=${api%/}
token=${EXECUTOR_API_TOKEN:?set EXECUTOR_API_TOKEN}
command -v curl >/dev/null || die "curl is required"
command -v sha256sum >/dev/null || die "sha256sum is required"

hex=$(sha256sum -- "$file" | cut -d' ' -f1)
ref="sha256:$hex"
# base64 of the raw 32-byte digest, as the x-amz-checksum-sha256 header wants it.
checksum=$(printf "$(printf '%s' "$hex" | sed 's/../\\x&/g')" | base64 | tr -d '\n')
body="{\"hashes\":[\"$ref\"]}"

api_post() { # path -> response body; fails on a non-2xx status, printing the error body
  local out status
  out=$(curl -sS -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data "$body" -w '\n%{http_code}' "$api$1") || die "POST $1 failed"
  status=${out##*$'\n'}
  out=${out%$'\n'*}
  [[ $status == 2* ]] || die "POST $1 answered $status: $out"
  printf '%s' "$out"
}

json_upload_url() { # BlobCheckResponse on stdin -> the uploadUrl of $ref, or nothing
  if command -v jq >/dev/null; then
    jq -r --arg h "$ref" '.missing[] | select(.hash == $h) | .uploadUrl'
  else
    # serde_json escapes nothing in a URL but `"` and `\`, which presigned URLs never contain.
    tr -d '\n' | grep -o "{[^{}]*\"hash\":\"$ref\"[^{}]*}" | grep -o '"uploadUrl":"[^"]*"' |
      head -n1 | sed 's/^"uploadUrl":"//; s/"$//'
  fi
}

check=$(api_post /v1/blobs/check)
url=$(printf '%s' "$check" | json_upload_url)
if [ -z "$url" ]; then
  printf '%s' "$check" | grep -q "\"$ref\"" || die "check did not answer for $ref: $check"
  echo "executor-upload: $ref already present, upload skipped" >&2
  echo "$ref"
  exit 0
fi

status=$(curl -sS -o /dev/stderr -w '%{http_code}' -X PUT -H "x-amz-checksum-sha256: $checksum" \
  -H 'Content-Type:' --upload-file "$file" "$url") || die "upload failed"
[[ $status == 2* ]] || die "upload answered $status"

fin=$(api_post /v1/blobs/finalize)
printf '%s' "$fin" | grep -q "\"$ref\"" || die "finalize did not record $ref: $fin"
echo "executor-upload: $ref uploaded" >&2
echo "$ref"
