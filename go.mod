module github.com/glean-hpc/glean

go 1.26.8
