//go:build !memkitdebug

package buffer

// debug is false in release builds: the checks guarded by it compile away.
// Build with -tags memkitdebug to turn them on.
const debug = false
