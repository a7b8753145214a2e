//go:build memkitdebug

package checked

// Enabled is true in the checked build: go test -tags memkitdebug.
const Enabled = true
