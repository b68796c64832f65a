print("before")
print(1 / 0)
