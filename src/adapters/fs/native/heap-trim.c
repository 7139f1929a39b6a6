/*
 * malloc_trim(3) for Node, which has no binding for it. glibc keeps memory that threads
 * have freed in its arenas for their next allocations; after a large deploy the process
 * holds that for nothing, and the next deploy's peak stacks on it
 * (docs/performance.md). The call runs on libuv's thread pool and settles a promise with
 * whether anything was returned to the system. Where the C library is not glibc there is
 * no such call, and the promise settles with false.
 */
#include <node_api.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  int released;
} Request;

static void run(napi_env env, void *data) {
  (void)env;
  Request *request = data;
#ifdef __GLIBC__
  request->released = malloc_trim(0);
#else
  request->released = 0;
#endif
}

static void settle(napi_env env, napi_status status, void *data) {
  Request *request = data;
  napi_value result;
  napi_get_boolean(env, status == napi_ok && request->released != 0, &result);
  napi_resolve_deferred(env, request->deferred, result);
  napi_delete_async_work(env, request->work);
  free(request);
}

/* trim(): a promise of whether the C library returned freed memory to the system. */
static napi_value trim_js(napi_env env, napi_callback_info info) {
  (void)info;
  Request *request = calloc(1, sizeof *request);
  if (request == NULL) {
    napi_throw_error(env, "ENOMEM", "trim: out of memory");
    return NULL;
  }
  napi_value promise, name;
  napi_create_promise(env, &request->deferred, &promise);
  napi_create_string_utf8(env, "heapTrim", NAPI_AUTO_LENGTH, &name);
  napi_create_async_work(env, NULL, name, run, settle, request, &request->work);
  napi_queue_async_work(env, request->work);
  return promise;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim_js, NULL, &fn);
  napi_set_named_property(env, exports, "trim", fn);
  return exports;
}
