print("before")
error("boom")
