# v1/ and v2/ are the two releases make-repo.sh turns into a repository; they are not
# tests of the examples folder itself.
collect_ignore = ["v1", "v2"]
