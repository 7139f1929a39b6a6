/*
 * syncfs(2) for Node, which has no binding for it. Spawning coreutils' `sync -f` holds
 * the service's event loop for a fork per deploy (docs/performance.md); this runs the
 * call on libuv's thread pool instead and settles a promise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  char *path;
  int error;
  const char *syscall;
} Request;

static void run(napi_env env, void *data) {
  (void)env;
  Request *request = data;
  int fd = open(request->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    request->error = errno;
    request->syscall = "open";
    return;
  }
  if (syncfs(fd) != 0) {
    request->error = errno;
    request->syscall = "syncfs";
  }
  close(fd);
}

/* An Error shaped like Node's own: `code` (ENOENT, EIO...), `errno`, `syscall`, `path`. */
static napi_value failure(napi_env env, const Request *request) {
  const char *syscall = request->syscall;
  const char *code = uv_err_name(uv_translate_sys_error(request->error));
  char text[4096];
  snprintf(text, sizeof text, "%s: %s, %s '%s'", code, strerror(request->error), syscall, request->path);
  napi_value message, code_value, error, number, syscall_value, path_value;
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &message);
  napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &code_value);
  napi_create_error(env, code_value, message, &error);
  napi_create_int32(env, -request->error, &number);
  napi_set_named_property(env, error, "errno", number);
  napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &syscall_value);
  napi_set_named_property(env, error, "syscall", syscall_value);
  napi_create_string_utf8(env, request->path, NAPI_AUTO_LENGTH, &path_value);
  napi_set_named_property(env, error, "path", path_value);
  return error;
}

static void settle(napi_env env, napi_status status, void *data) {
  Request *request = data;
  if (status == napi_ok && request->error == 0) {
    napi_value undefined;
    napi_get_undefined(env, &undefined);
    napi_resolve_deferred(env, request->deferred, undefined);
  } else {
    if (request->error == 0) {
      request->error = ECANCELED;
      request->syscall = "syncfs";
    }
    napi_reject_deferred(env, request->deferred, failure(env, request));
  }
  napi_delete_async_work(env, request->work);
  free(request->path);
  free(request);
}

/* syncfs(path): a promise that settles once the filesystem holding `path` is flushed. */
static napi_value syncfs_js(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  size_t length = 0;
  if (argc < 1 || napi_get_value_string_utf8(env, argv[0], NULL, 0, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "syncfs(path): path must be a string");
    return NULL;
  }
  Request *request = calloc(1, sizeof *request);
  if (request == NULL || (request->path = malloc(length + 1)) == NULL) {
    free(request);
    napi_throw_error(env, "ENOMEM", "syncfs: out of memory");
    return NULL;
  }
  napi_get_value_string_utf8(env, argv[0], request->path, length + 1, &length);
  napi_value promise, name;
  napi_create_promise(env, &request->deferred, &promise);
  napi_create_string_utf8(env, "syncfs", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, run, settle, request, &request->work);
  napi_queue_async_work(env, request->work);
  return promise;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "syncfs", NAPI_AUTO_LENGTH, syncfs_js, NULL, &fn);
  napi_set_named_property(env, exports, "syncfs", fn);
  return exports;
}
