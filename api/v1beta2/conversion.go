package v1beta2

// v1beta2 is the hub of conversion: the storage version, which every other served version
// (v1beta1) converts to and from.

// Hub marks Redis as the conversion hub.
func (*Redis) Hub() {}

// Hub marks RedisCluster as the conversion hub.
func (*RedisCluster) Hub() {}

// Hub marks RedisReplication as the conversion hub.
func (*RedisReplication) Hub() {}

// Hub marks RedisSentinel as the conversion hub.
func (*RedisSentinel) Hub() {}
