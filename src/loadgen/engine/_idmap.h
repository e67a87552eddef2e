/* A map from int64 keys to int64 values (open addressing, linear probing, at most half full):
 * what loadgen.engine._hotpath keeps per stream or per producer as deliveries arrive. Reserve room
 * first, then insert, so a delivery's state is stored all or none. */
#ifndef LOADGEN_IDMAP_H
#define LOADGEN_IDMAP_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    int64_t *keys;
    int64_t *values;
    unsigned char *used;
    Py_ssize_t cap; /* a power of two, or 0 before the first key */
    Py_ssize_t count;
} IdMap;

static inline Py_ssize_t idmap_slot(const IdMap *map, int64_t key) {
    uint64_t hash = (uint64_t)key * UINT64_C(0x9E3779B97F4A7C15);
    Py_ssize_t mask = map->cap - 1;
    Py_ssize_t slot = (Py_ssize_t)((hash ^ (hash >> 32)) & (uint64_t)mask);
    while (map->used[slot] && map->keys[slot] != key) {
        slot = (slot + 1) & mask;
    }
    return slot;
}

/* Where key's value is, or NULL if the map has no such key. */
static inline int64_t *idmap_find(IdMap *map, int64_t key) {
    if (map->cap == 0) {
        return NULL;
    }
    Py_ssize_t slot = idmap_slot(map, key);
    return map->used[slot] ? &map->values[slot] : NULL;
}

static void idmap_free(IdMap *map) {
    PyMem_Free(map->keys);
    PyMem_Free(map->values);
    PyMem_Free(map->used);
    *map = (IdMap){0};
}

/* Room for one more key; -1 with MemoryError set (the map unchanged) if there is none. */
static int idmap_reserve(IdMap *map) {
    if ((map->count + 1) * 2 <= map->cap) {
        return 0;
    }
    IdMap grown = {0};
    grown.cap = map->cap ? map->cap * 2 : 64;
    grown.keys = PyMem_Malloc((size_t)grown.cap * sizeof(int64_t));
    grown.values = PyMem_Malloc((size_t)grown.cap * sizeof(int64_t));
    grown.used = PyMem_Calloc((size_t)grown.cap, 1);
    if (grown.keys == NULL || grown.values == NULL || grown.used == NULL) {
        idmap_free(&grown);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < map->cap; i++) {
        if (map->used[i]) {
            Py_ssize_t slot = idmap_slot(&grown, map->keys[i]);
            grown.used[slot] = 1;
            grown.keys[slot] = map->keys[i];
            grown.values[slot] = map->values[i];
            grown.count++;
        }
    }
    idmap_free(map);
    *map = grown;
    return 0;
}

/* Add key, which the map does not have, where idmap_reserve made room. */
static inline void idmap_insert(IdMap *map, int64_t key, int64_t value) {
    Py_ssize_t slot = idmap_slot(map, key);
    map->used[slot] = 1;
    map->keys[slot] = key;
    map->values[slot] = value;
    map->count++;
}

#endif
