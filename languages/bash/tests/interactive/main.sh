printf "Name? "
read -r name
echo "Hello, $name!"
