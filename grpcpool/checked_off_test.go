//go:build !memkitdebug

package grpcpool_test

const checkedBuild = false
