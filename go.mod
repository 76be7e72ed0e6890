module github.com/glean-hpc/glean

go 1.24
