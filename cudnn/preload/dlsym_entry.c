/*
 * dlsym and dlvsym, interposed: the entry points (x86-64 assembly).
 *
 * glibc's dlsym answers RTLD_DEFAULT and RTLD_NEXT relative to its caller,
 * which it finds by its own return address. A wrapper written in C that
 * called glibc's dlsym would make this library the caller: RTLD_NEXT would
 * search after this library, RTLD_DEFAULT in this library's scope. So each
 * entry asks dlsym_hook (dlsym.c) first, with the caller's return address;
 * when the hook returns NULL (every name that is not a served cuDNN
 * function, and every lookup it stands aside from) the entry jumps to
 * glibc's function with the caller's arguments and the caller's return
 * address untouched: glibc answers exactly as if called directly, same
 * pointer, same dlerror state. Only when the hook returns this library's
 * own function does the entry return it.
 *
 * Other architectures: the entries are not built, the library defines no
 * dlsym, and programs that take cuDNN's functions with dlsym are not served
 * (docs/interposer.md).
 */
#include "dlsym.h"

#if defined(__x86_64__)
/* Stack on entry: 0(%rsp) the caller's return address, %rsp = 8 mod 16.
 * dlsym saves 2 argument registers plus 8 bytes of padding, dlvsym 3, so
 * that the hook is called with %rsp = 0 mod 16; the return address is then
 * at 24(%rsp) in both. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".p2align 4\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  movq 24(%rsp), %rcx\n"
        "  xorl %edx, %edx\n"
        "  call dlsym_hook\n"
        "  addq $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  testq %rax, %rax\n"
        "  jnz 1f\n"
        "  movq libc_dlsym(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1:\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n"
        "\n"
        ".globl dlvsym\n"
        ".type dlvsym, @function\n"
        ".p2align 4\n"
        "dlvsym:\n"
        "  .cfi_startproc\n"
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rdx\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  movq 24(%rsp), %rcx\n"
        "  call dlsym_hook\n"
        "  popq %rdx\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  testq %rax, %rax\n"
        "  jnz 1f\n"
        "  movq libc_dlvsym(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1:\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size dlvsym, .-dlvsym\n");
#endif
