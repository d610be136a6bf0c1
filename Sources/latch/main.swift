import ArgumentParser
print("latch")
