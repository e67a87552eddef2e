/* A growable column of int64 values, as loadgen.engine._hotpath's recorders keep them: reserve room
 * first, then store, so a row of several columns is stored all or none. */
#ifndef LOADGEN_COLUMN_H
#define LOADGEN_COLUMN_H

#include <Python.h>
#include <stdint.h>

typedef struct {
    int64_t *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Column;

/* Room for n more values, so a row of several columns is stored all or none. */
static int column_reserve(Column *column, Py_ssize_t n) {
    if (column->len + n <= column->cap) {
        return 0;
    }
    Py_ssize_t cap = column->cap ? column->cap : 4096;
    while (cap < column->len + n) {
        cap *= 2;
    }
    int64_t *grown = PyMem_Realloc(column->data, (size_t)cap * sizeof(int64_t));
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    column->data = grown;
    column->cap = cap;
    return 0;
}

/* Store a value where column_reserve made room. */
static inline void column_store(Column *column, int64_t value) {
    column->data[column->len++] = value;
}

/* A copy of the column's values as bytes; the column is left as it is. */
static PyObject *column_copy(const Column *column) {
    return PyBytes_FromStringAndSize((const char *)column->data,
                                     column->len * (Py_ssize_t)sizeof(int64_t));
}

/* Empty the column (a buffer far bigger than what it held is given back, so one burst does not
 * keep its memory for the rest of the run). Allocates nothing, so it cannot fail. */
static void column_reset(Column *column) {
    if (column->cap > 65536 && column->len < column->cap / 4) {
        PyMem_Free(column->data);
        column->data = NULL;
        column->cap = 0;
    }
    column->len = 0;
}

#endif
