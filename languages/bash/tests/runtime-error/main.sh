set -e
echo before
ls /nonexistent
echo after
