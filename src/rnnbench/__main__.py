from .cli import main

if __name__ == "__main__":  # (not when a --runs process re-imports this module as __mp_main__)
    main()
