//go:build memkitdebug

package grpcpool_test

// checkedBuild reports memkit's checked build, whose bytepool records a
// stack per Get and so allocates.
const checkedBuild = true
