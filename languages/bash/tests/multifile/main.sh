source ./lib/greet.sh
greet World
