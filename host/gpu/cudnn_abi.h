/* cudnn_abi.h: the part of cuDNN 9's backend (graph) C API that cuda_dnn*.c use, declared here
 * because the library is opened with dlopen and its headers are not part of the CUDA toolkit
 * (a CI machine with CUDA headers need not have cuDNN's). The names and values are cuDNN 9's
 * (cudnn_graph.h, ABI-stable within the major version); tests/c/test_cudnn_abi.c compares every
 * value below with the real header wherever one is installed. Only cuda_dnn*.c include this. */
#ifndef TB_CUDNN_ABI_H
#define TB_CUDNN_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int tb_cudnnStatus_t;
typedef struct tb_cudnnContext *tb_cudnnHandle_t;
typedef void *tb_cudnnBackendDescriptor_t;

enum {
  TB_CUDNN_STATUS_SUCCESS = 0,
  TB_CUDNN_STATUS_NOT_SUPPORTED = 3000, /* 3000-3999: the not-supported family */
};

/* cudnnDataType_t */
enum {
  TB_CUDNN_DATA_FLOAT = 0,
  TB_CUDNN_DATA_HALF = 2,
  TB_CUDNN_DATA_INT32 = 4,
  TB_CUDNN_DATA_BFLOAT16 = 9,
  TB_CUDNN_DATA_BOOLEAN = 11,
};

/* cudnnBackendAttributeType_t */
enum {
  TB_CUDNN_TYPE_HANDLE = 0,
  TB_CUDNN_TYPE_DATA_TYPE = 1,
  TB_CUDNN_TYPE_BOOLEAN = 2,
  TB_CUDNN_TYPE_INT64 = 3,
  TB_CUDNN_TYPE_FLOAT = 4,
  TB_CUDNN_TYPE_DOUBLE = 5,
  TB_CUDNN_TYPE_VOID_PTR = 6,
  TB_CUDNN_TYPE_CONVOLUTION_MODE = 7,
  TB_CUDNN_TYPE_HEUR_MODE = 8,
  TB_CUDNN_TYPE_KNOB_TYPE = 9,
  TB_CUDNN_TYPE_POINTWISE_MODE = 14,
  TB_CUDNN_TYPE_BACKEND_DESCRIPTOR = 15,
  TB_CUDNN_TYPE_REDUCTION_OPERATOR_TYPE = 18,
  TB_CUDNN_TYPE_NORM_MODE = 27,
  TB_CUDNN_TYPE_NORM_FWD_PHASE = 28,
};

/* cudnnBackendDescriptorType_t */
enum {
  TB_CUDNN_BACKEND_POINTWISE_DESCRIPTOR = 0,
  TB_CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR = 1,
  TB_CUDNN_BACKEND_ENGINE_DESCRIPTOR = 2,
  TB_CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 3,
  TB_CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 4,
  TB_CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 5,
  TB_CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR = 7,
  TB_CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR = 10,
  TB_CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR = 13,
  TB_CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 15,
  TB_CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 16,
  TB_CUDNN_BACKEND_TENSOR_DESCRIPTOR = 17,
  TB_CUDNN_BACKEND_MATMUL_DESCRIPTOR = 18,
  TB_CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR = 19,
  TB_CUDNN_BACKEND_REDUCTION_DESCRIPTOR = 21,
  TB_CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR = 22,
  TB_CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR = 29,
};

/* cudnnBackendAttributeName_t */
enum {
  TB_CUDNN_ATTR_POINTWISE_MODE = 0,
  TB_CUDNN_ATTR_POINTWISE_MATH_PREC = 1,
  TB_CUDNN_ATTR_POINTWISE_AXIS = 9,
  TB_CUDNN_ATTR_CONVOLUTION_COMP_TYPE = 100,
  TB_CUDNN_ATTR_CONVOLUTION_CONV_MODE = 101,
  TB_CUDNN_ATTR_CONVOLUTION_DILATIONS = 102,
  TB_CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES = 103,
  TB_CUDNN_ATTR_CONVOLUTION_POST_PADDINGS = 104,
  TB_CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS = 105,
  TB_CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS = 106,
  TB_CUDNN_ATTR_ENGINEHEUR_MODE = 200,
  TB_CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
  TB_CUDNN_ATTR_ENGINEHEUR_RESULTS = 202,
  TB_CUDNN_ATTR_ENGINECFG_ENGINE = 300,
  TB_CUDNN_ATTR_ENGINECFG_KNOB_CHOICES = 302,
  TB_CUDNN_ATTR_EXECUTION_PLAN_HANDLE = 400, /* deprecated in 9, still honoured */
  TB_CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
  TB_CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402,
  TB_CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE = 600,
  TB_CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE = 601,
  TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA = 700,
  TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA = 701,
  TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702,
  TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W = 703,
  TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X = 704,
  TB_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y = 705,
  TB_CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR = 750,
  TB_CUDNN_ATTR_OPERATION_POINTWISE_XDESC = 751,
  TB_CUDNN_ATTR_OPERATION_POINTWISE_BDESC = 752,
  TB_CUDNN_ATTR_OPERATION_POINTWISE_YDESC = 753,
  TB_CUDNN_ATTR_OPERATION_POINTWISE_TDESC = 758,
  TB_CUDNN_ATTR_OPERATIONGRAPH_HANDLE = 800, /* deprecated in 9, still honoured */
  TB_CUDNN_ATTR_OPERATIONGRAPH_OPS = 801,
  TB_CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900,
  TB_CUDNN_ATTR_TENSOR_DATA_TYPE = 901,
  TB_CUDNN_ATTR_TENSOR_DIMENSIONS = 902,
  TB_CUDNN_ATTR_TENSOR_STRIDES = 903,
  TB_CUDNN_ATTR_TENSOR_UNIQUE_ID = 906,
  TB_CUDNN_ATTR_TENSOR_IS_VIRTUAL = 907,
  TB_CUDNN_ATTR_TENSOR_IS_BY_VALUE = 908,
  TB_CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000,
  TB_CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001,
  TB_CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003,
  TB_CUDNN_ATTR_ENGINE_GLOBAL_INDEX = 1301,
  TB_CUDNN_ATTR_MATMUL_COMP_TYPE = 1500,
  TB_CUDNN_ATTR_OPERATION_MATMUL_ADESC = 1520,
  TB_CUDNN_ATTR_OPERATION_MATMUL_BDESC = 1521,
  TB_CUDNN_ATTR_OPERATION_MATMUL_CDESC = 1522,
  TB_CUDNN_ATTR_OPERATION_MATMUL_DESC = 1523,
  TB_CUDNN_ATTR_REDUCTION_OPERATOR = 1600,
  TB_CUDNN_ATTR_REDUCTION_COMP_TYPE = 1601,
  TB_CUDNN_ATTR_OPERATION_REDUCTION_XDESC = 1610,
  TB_CUDNN_ATTR_OPERATION_REDUCTION_YDESC = 1611,
  TB_CUDNN_ATTR_OPERATION_REDUCTION_DESC = 1612,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_MODE = 2000,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_PHASE = 2001,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_XDESC = 2002,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC = 2003,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC = 2004,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC = 2005,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC = 2006,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC = 2007,
  TB_CUDNN_ATTR_OPERATION_NORM_FWD_YDESC = 2013,
};

/* cudnnBackendHeurMode_t, cudnnBackendNormMode_t, cudnnBackendNormFwdPhase_t */
enum { TB_CUDNN_HEUR_MODE_INSTANT = 0, TB_CUDNN_HEUR_MODE_FALLBACK = 2 };
enum { TB_CUDNN_BATCH_NORM = 2 };
enum { TB_CUDNN_NORM_FWD_TRAINING = 1 };
/* cudnnConvolutionMode_t: CROSS_CORRELATION is PyTorch's (no kernel flip) */
enum { TB_CUDNN_CROSS_CORRELATION = 1 };
/* The legacy (imperative) pooling API the shim libcudnn.so.9 still exports (cudnn_ops.h, deprecated
 * in 9 but present): cudnnTensorFormat_t, cudnnPoolingMode_t, cudnnNanPropagation_t */
enum { TB_CUDNN_TENSOR_NCHW = 0 };
enum { TB_CUDNN_POOLING_MAX = 0 };
enum { TB_CUDNN_NOT_PROPAGATE_NAN = 0, TB_CUDNN_PROPAGATE_NAN = 1 };
/* cudnnPointwiseMode_t and cudnnReduceTensorOp_t: the operations of the attention graph */
enum {
  TB_CUDNN_POINTWISE_ADD = 0,
  TB_CUDNN_POINTWISE_MUL = 1,
  TB_CUDNN_POINTWISE_DIV = 6,
  TB_CUDNN_POINTWISE_SUB = 9,
  TB_CUDNN_POINTWISE_EXP = 13,
  TB_CUDNN_POINTWISE_LOG = 15,
  TB_CUDNN_POINTWISE_CMP_GE = 303,
  TB_CUDNN_POINTWISE_GEN_INDEX = 501,
  TB_CUDNN_POINTWISE_BINARY_SELECT = 601,
};
enum { TB_CUDNN_REDUCE_TENSOR_ADD = 0, TB_CUDNN_REDUCE_TENSOR_MAX = 3 };
/* cudnnBackendKnobType_t: how many knob types there are (the most choices a config holds) */
enum { TB_CUDNN_KNOB_TYPE_COUNTS = 44 };

/* The entry points, as cuda_dnn_lib.c finds them with dlsym (every one is in libcudnn.so.9). */
typedef size_t tb_cudnnGetVersion_fn(void);
typedef const char *tb_cudnnGetErrorString_fn(tb_cudnnStatus_t status);
typedef void tb_cudnnGetLastErrorString_fn(char *message, size_t max_size);
typedef tb_cudnnStatus_t tb_cudnnCreate_fn(tb_cudnnHandle_t *handle);
typedef tb_cudnnStatus_t tb_cudnnDestroy_fn(tb_cudnnHandle_t handle);
typedef tb_cudnnStatus_t tb_cudnnSetStream_fn(tb_cudnnHandle_t handle, void *stream);
typedef tb_cudnnStatus_t tb_cudnnBackendCreateDescriptor_fn(int type, tb_cudnnBackendDescriptor_t *d);
typedef tb_cudnnStatus_t tb_cudnnBackendDestroyDescriptor_fn(tb_cudnnBackendDescriptor_t d);
typedef tb_cudnnStatus_t tb_cudnnBackendFinalize_fn(tb_cudnnBackendDescriptor_t d);
typedef tb_cudnnStatus_t tb_cudnnBackendSetAttribute_fn(tb_cudnnBackendDescriptor_t d, int name,
                                                        int type, int64_t count, const void *values);
typedef tb_cudnnStatus_t tb_cudnnBackendGetAttribute_fn(tb_cudnnBackendDescriptor_t d, int name,
                                                        int type, int64_t requested,
                                                        int64_t *count, void *values);
typedef tb_cudnnStatus_t tb_cudnnBackendExecute_fn(tb_cudnnHandle_t handle,
                                                   tb_cudnnBackendDescriptor_t plan,
                                                   tb_cudnnBackendDescriptor_t pack);

/* The legacy pooling entry points (optional: a library without them makes pooling unsupported). */
typedef void *tb_cudnnTensorDescriptor_t;
typedef void *tb_cudnnPoolingDescriptor_t;
typedef tb_cudnnStatus_t tb_cudnnCreateTensorDescriptor_fn(tb_cudnnTensorDescriptor_t *d);
typedef tb_cudnnStatus_t tb_cudnnSetTensor4dDescriptor_fn(tb_cudnnTensorDescriptor_t d, int format, int data_type,
                                                          int n, int c, int h, int w);
typedef tb_cudnnStatus_t tb_cudnnDestroyTensorDescriptor_fn(tb_cudnnTensorDescriptor_t d);
typedef tb_cudnnStatus_t tb_cudnnCreatePoolingDescriptor_fn(tb_cudnnPoolingDescriptor_t *d);
typedef tb_cudnnStatus_t tb_cudnnSetPooling2dDescriptor_fn(tb_cudnnPoolingDescriptor_t d, int mode, int nan_opt,
                                                           int window_h, int window_w, int pad_h, int pad_w,
                                                           int stride_h, int stride_w);
typedef tb_cudnnStatus_t tb_cudnnDestroyPoolingDescriptor_fn(tb_cudnnPoolingDescriptor_t d);
typedef tb_cudnnStatus_t tb_cudnnPoolingForward_fn(tb_cudnnHandle_t handle, tb_cudnnPoolingDescriptor_t pool,
                                                   const void *alpha, tb_cudnnTensorDescriptor_t x_desc,
                                                   const void *x, const void *beta,
                                                   tb_cudnnTensorDescriptor_t y_desc, void *y);

#endif
