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
 * dlsym saves 2 argument registers plus 8 bytes of padding, dlvsym 3, so
 * that the hook is called with %rsp = 0 mod 16; the return address is then
 * at 24(%rsp) in both. dlsym_hook, libc_dlsym and libc_dlvsym are hidden
 * (dlsym.h). */
	.hidden dlsym_hook
	.hidden libc_dlsym
	.hidden libc_dlvsym
	.text
.globl dlsym
.type dlsym, @function
.p2align 4
dlsym:
  .cfi_startproc
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  movq 24(%rsp), %rcx
  xorl %edx, %edx
  call dlsym_hook
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  jnz 1f
  movq libc_dlsym(%rip), %rax
  testq %rax, %rax
  jz 1f
  jmp *%rax
1:
  ret
  .cfi_endproc
.size dlsym, .-dlsym

.globl dlvsym
.type dlvsym, @function
.p2align 4
dlvsym:
  .cfi_startproc
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
  movq libc_dlvsym(%rip), %rax
  testq %rax, %rax
  jz 1f
  jmp *%rax
1:
  ret
  .cfi_endproc
.size dlvsym, .-dlvsym
#endif

/* No executable stack (an object without this note would ask for one). */
#if defined(__aarch64__) || defined(__arm__)
	.section .note.GNU-stack,"",%progbits
#else
	.section .note.GNU-stack,"",@progbits
#endif
