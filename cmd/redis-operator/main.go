// Command redis-operator runs the controllers of the Redis operator.
package main

func main() {}
