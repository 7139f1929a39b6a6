{
  "targets": [
    {
      "target_name": "syncfs",
      "sources": ["src/adapters/fs/native/syncfs.c"],
      "cflags": ["-Wall", "-Wextra", "-O2"]
    }
  ]
}
