{
  "targets": [
    {
      "target_name": "syncfs",
      "sources": ["src/adapters/fs/native/syncfs.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    },
    {
      "target_name": "heap_trim",
      "sources": ["src/adapters/fs/native/heap-trim.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
