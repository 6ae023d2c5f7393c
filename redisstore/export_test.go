package redisstore

// SetPartitionKeys lowers a store's per-partition bound, so that a test
// can flood it for 10x the bound in a second.
func SetPartitionKeys(s *StepUpStore, n int) { s.maxKeys = n }

// SetReplayPartitionKeys lowers a replay store's per-partition bound.
func SetReplayPartitionKeys(s any, n int) { s.(*replayStore).maxKeys = n }

// ErrConfig is the unexported configuration error, for errors.Is.
var ErrConfig = errConfig

// SetPinRouteTools lowers a pin store's per-route bound.
func SetPinRouteTools(s *PinStore, n int) { s.maxTools = n }
