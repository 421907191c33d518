/*
 * dlsym and dlvsym, interposed: the entry points (x86-64 assembly; an
 * assembler file, so that the wheel's glibc_floor.h, which pins the
 * version of the C code's references to dlsym, does not reach them).
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
#if defined(__x86_64__)
/* Stack on entry: 0(%rsp) the caller's return address, %rsp = 8 mod 16.
 * Each entry saves the 3 argument registers (dlsym's third, %rdx, set to
 * 0 first: no version), so that the hook is called with %rsp = 0 mod 16
 * and the return address at 24(%rsp); glibc's dlsym ignores %rdx.
 * dlsym_hook, libc_dlsym and libc_dlvsym are hidden (dlsym.h). */
	.hidden dlsym_hook
	.hidden libc_dlsym
	.hidden libc_dlvsym
	.text

/* ENTRY name, libc, noversion: the entry point name, which falls back to
 * the glibc function whose address libc holds; noversion 1: it has no
 * version argument (dlsym), the hook gets NULL. */
.macro ENTRY name, libc, noversion
.globl \name
.type \name, @function
.p2align 4
\name:
  .cfi_startproc
  .if \noversion
  xorl %edx, %edx
  .endif
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  pushq %rdx
  .cfi_adjust_cfa_offset 8
  movq 24(%rsp), %rcx
  call dlsym_hook
  popq %rdx
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  jnz 1f
  movq \libc(%rip), %rax
  testq %rax, %rax
  jz 1f
  jmp *%rax
1:
  ret
  .cfi_endproc
.size \name, .-\name
.endm

ENTRY dlsym, libc_dlsym, 1
ENTRY dlvsym, libc_dlvsym, 0
#endif

/* No executable stack (an object without this note would ask for one). */
#if defined(__aarch64__) || defined(__arm__)
	.section .note.GNU-stack,"",%progbits
#else
	.section .note.GNU-stack,"",@progbits
#endif
